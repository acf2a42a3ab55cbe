//! A file's zstd dictionary: what its writer compresses data blocks with
//! once it has one, and what its reader decompresses them with.
//!
//! A data block of a few hundred small entries is a short zstd frame, and
//! decompressing a short frame is mostly building its entropy tables. A
//! dictionary carries tables and common content prepared once for the
//! whole file, so its frames are smaller and each decompresses without
//! building tables of its own (`docs/results-log.md`, "A per-file
//! dictionary").
//!
//! The writer trains the dictionary on the raw bytes of the file's first
//! data blocks, which it compresses plainly meanwhile; the blocks after are
//! compressed with it. The dictionary is stored in a block of its own at
//! the file's end, named by the footer, so no block is held back.
//!
//! A block compressed with a dictionary means nothing without it: a
//! compaction may copy such a block into its output only if the output
//! compresses with the same dictionary. An output that has not yet
//! trained one takes the dictionary of the first such block it copies
//! ([`WriterDictionary::adopt`]), so that a file's blocks keep passing
//! through compaction after compaction.

use bytes::Bytes;
use zstd::zstd_safe::{CCtx, CDict, DDict};

/// The smallest and the largest dictionary a writer trains (zstd's
/// smallest is 256 bytes).
pub const DICTIONARY_BYTES: std::ops::RangeInclusive<usize> = 256..=64 << 10;

/// Raw bytes of data blocks sampled to train a dictionary of `dict_bytes`:
/// zstd's trainer wants some hundred times the dictionary's size, and what
/// is sampled is compressed without one, so it takes the least that
/// trains well.
fn sample_bytes(dict_bytes: usize) -> usize {
    dict_bytes * 64
}

/// The dictionary side of a writer's compression.
pub(crate) enum WriterDictionary {
    /// The file has no dictionary.
    Off,
    /// Gathering the raw bytes of the first data blocks to train on.
    Sampling {
        /// Bytes of the dictionary to train.
        dict_bytes: usize,
        /// The blocks, one after another.
        samples: Vec<u8>,
        /// Each block's length.
        sizes: Vec<usize>,
    },
    /// Compressing data blocks with a dictionary.
    Ready(Box<Trained>),
}

/// A dictionary ready to compress with.
pub(crate) struct Trained {
    /// The dictionary as stored in the file.
    pub bytes: Bytes,
    cdict: CDict<'static>,
    cctx: CCtx<'static>,
    /// Blocks compressed with it (or copied in, compressed with it).
    pub blocks: u64,
}

impl WriterDictionary {
    /// A writer's dictionary: trained on its first blocks if `dict_bytes`
    /// is given (clamped to [`DICTIONARY_BYTES`]), else none.
    pub fn new(dict_bytes: Option<usize>) -> WriterDictionary {
        match dict_bytes {
            None => WriterDictionary::Off,
            Some(n) => WriterDictionary::Sampling {
                dict_bytes: n.clamp(*DICTIONARY_BYTES.start(), *DICTIONARY_BYTES.end()),
                samples: Vec::new(),
                sizes: Vec::new(),
            },
        }
    }

    /// `raw` compressed with the dictionary at `level`, if there is one;
    /// else `None`, and `raw` is taken as a sample (training the dictionary
    /// once there are enough).
    pub fn compress(&mut self, raw: &[u8], level: i32) -> std::io::Result<Option<Vec<u8>>> {
        match self {
            WriterDictionary::Off => Ok(None),
            WriterDictionary::Ready(t) => t.compress(raw).map(Some),
            WriterDictionary::Sampling { dict_bytes, samples, sizes } => {
                samples.extend_from_slice(raw);
                sizes.push(raw.len());
                if samples.len() >= sample_bytes(*dict_bytes) {
                    *self = train(samples, sizes, *dict_bytes, level);
                }
                Ok(None)
            }
        }
    }

    /// Whether a block compressed with `dictionary` may be copied into the
    /// file: it compresses with the same one, or has none yet and may take it.
    pub fn can_take(&self, dictionary: &Bytes) -> bool {
        match self {
            WriterDictionary::Off => false,
            WriterDictionary::Sampling { .. } => true,
            WriterDictionary::Ready(t) => same_dictionary(&t.bytes, dictionary),
        }
    }

    /// Makes `dictionary` the file's, for a block compressed with it that
    /// is copied in: true if it is (or already was), false if the file
    /// compresses with another or with none.
    pub fn adopt(&mut self, dictionary: &Bytes, level: i32) -> bool {
        if let WriterDictionary::Sampling { .. } = self {
            match Trained::new(dictionary.clone(), level) {
                Some(t) => *self = WriterDictionary::Ready(Box::new(t)),
                None => return false,
            }
        }
        match self {
            WriterDictionary::Ready(t) if same_dictionary(&t.bytes, dictionary) => {
                t.blocks += 1;
                true
            }
            _ => false,
        }
    }

    /// The dictionary to store in the file: one that some block uses.
    pub fn to_store(&self) -> Option<&Bytes> {
        match self {
            WriterDictionary::Ready(t) if t.blocks > 0 => Some(&t.bytes),
            _ => None,
        }
    }
}

/// Whether two dictionaries are the same bytes: at once if they are one
/// buffer (an adopted dictionary and the file it came from), else by
/// comparing them.
fn same_dictionary(a: &Bytes, b: &Bytes) -> bool {
    (a.as_ptr() == b.as_ptr() && a.len() == b.len()) || a == b
}

/// A dictionary of `dict_bytes` trained on `samples`, or none if zstd
/// cannot train or load one from them (too few, or too alike).
fn train(samples: &[u8], sizes: &[usize], dict_bytes: usize, level: i32) -> WriterDictionary {
    let trained = zstd::dict::from_continuous(samples, sizes, dict_bytes);
    match trained.ok().and_then(|d| Trained::new(Bytes::from(d), level)) {
        Some(t) => WriterDictionary::Ready(Box::new(t)),
        None => WriterDictionary::Off,
    }
}

impl Trained {
    fn new(bytes: Bytes, level: i32) -> Option<Trained> {
        let cdict = CDict::try_create(&bytes, level)?;
        Some(Trained { bytes, cdict, cctx: CCtx::try_create()?, blocks: 0 })
    }

    fn compress(&mut self, raw: &[u8]) -> std::io::Result<Vec<u8>> {
        let mut out = Vec::with_capacity(zstd::zstd_safe::compress_bound(raw.len()));
        self.cctx.compress_using_cdict(&mut out, raw, &self.cdict).map_err(zstd_error)?;
        self.blocks += 1;
        Ok(out)
    }
}

/// A file's dictionary, prepared for decompression once, at open.
pub(crate) struct ReaderDictionary {
    /// The dictionary as stored.
    pub bytes: Bytes,
    /// Prepared for decompression.
    pub ddict: DDict<'static>,
}

impl ReaderDictionary {
    /// The dictionary `bytes`, prepared; `None` if zstd cannot load it.
    pub fn load(bytes: Bytes) -> Option<ReaderDictionary> {
        let ddict = DDict::try_create(&bytes)?;
        Some(ReaderDictionary { bytes, ddict })
    }
}

impl std::fmt::Debug for ReaderDictionary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ReaderDictionary({} bytes)", self.bytes.len())
    }
}

/// A zstd error code as an I/O error.
pub(crate) fn zstd_error(code: usize) -> std::io::Error {
    std::io::Error::other(zstd::zstd_safe::get_error_name(code))
}
