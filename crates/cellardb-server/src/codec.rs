//! The services' codec: prost's, but a request that does not decode is
//! `INVALID_ARGUMENT`. tonic's prost codec answers it `INTERNAL`, which
//! Google's clients may retry until their deadline; a request that does not
//! decode (bytes that are not the message, a message nested deeper than
//! the decoder follows) fails the same way every time it is sent. So does
//! a request whose messages would take too much memory decoded
//! ([`crate::decoded`]), refused before it is decoded.

use std::marker::PhantomData;

use bytes::Buf;
use prost::Message;
use tonic::Status;
use tonic::codec::{Codec, DecodeBuf, Decoder};
use tonic_prost::{ProstCodec, ProstEncoder};

use crate::decoded::{MAX_DECODED, decoded_size, shape_of};

/// The codec of every method: `T` answered, `U` taken.
#[derive(Debug)]
pub struct RequestCodec<T, U>(PhantomData<(T, U)>);

impl<T, U> Default for RequestCodec<T, U> {
    fn default() -> Self {
        RequestCodec(PhantomData)
    }
}

impl<T, U> Codec for RequestCodec<T, U>
where
    T: Message + Send + 'static,
    U: Message + Default + Send + 'static,
{
    type Encode = T;
    type Decode = U;
    type Encoder = ProstEncoder<T>;
    type Decoder = RequestDecoder<U>;

    fn encoder(&mut self) -> ProstEncoder<T> {
        ProstCodec::<T, U>::default().encoder()
    }

    fn decoder(&mut self) -> RequestDecoder<U> {
        RequestDecoder(PhantomData)
    }
}

/// Decodes a request, refusing what does not decode as `INVALID_ARGUMENT`.
#[derive(Debug)]
pub struct RequestDecoder<U>(PhantomData<U>);

impl<U: Message + Default + 'static> Decoder for RequestDecoder<U> {
    type Item = U;
    type Error = Status;

    fn decode(&mut self, buf: &mut DecodeBuf<'_>) -> Result<Option<U>, Status> {
        let bytes = buf.copy_to_bytes(buf.remaining());
        let decoded = decoded_size(&bytes, shape_of::<U>(), MAX_DECODED);
        if decoded > MAX_DECODED {
            return Err(Status::invalid_argument(format!(
                "the request holds too many messages: decoded, they would take over {} MiB (at most {} MiB; \
                 Bigtable's largest write, 100,000 mutations, takes three quarters of that)",
                decoded >> 20,
                MAX_DECODED >> 20
            )));
        }
        U::decode(bytes).map(Some).map_err(|e| {
            Status::invalid_argument(format!(
                "the request does not decode as a protobuf message (nested at most 100 deep): {e}"
            ))
        })
    }
}
