//! The spec file as serde reads and writes it: field for field what a user
//! writes, with the places of the fields checked later kept
//! ([`Spanned`]). `docs/lab.md` documents every field.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use toml::Spanned;

/// A spec file, as written.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct SpecFile {
    /// Name of the spec.
    pub name: Spanned<String>,
    /// What the data is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The generator's seed (42 if not given).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    /// The data.
    pub data: RawData,
    /// The key designs.
    #[serde(default)]
    pub designs: Vec<Spanned<RawDesign>>,
    /// The queries.
    #[serde(default)]
    pub queries: Vec<Spanned<RawQuery>>,
}

/// `[data]`.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawData {
    pub start: Spanned<String>,
    pub duration: Spanned<String>,
    pub cadence: Spanned<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub late: Option<Spanned<RawLate>>,
    pub entities: RawEntities,
    #[serde(default)]
    pub series: Vec<Spanned<RawSeries>>,
}

/// `[data.late]`.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawLate {
    pub fraction: Spanned<f64>,
    pub by: Spanned<String>,
}

/// `[data.entities]`.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawEntities {
    pub count: Spanned<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub noun: Option<String>,
    #[serde(default)]
    pub fields: BTreeMap<String, Spanned<RawEntityField>>,
}

/// One entity field: `{ cycle = [..] }`, `{ number = N, width = W }`,
/// `{ pick = [..] }` or `{ hex = DIGITS }`.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawEntityField {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cycle: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub number: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub width: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pick: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hex: Option<usize>,
}

/// `[[data.series]]`.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawSeries {
    pub name: String,
    pub shape: Spanned<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub initial: Option<[i64; 2]>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decimals: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub values: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub change: Option<Spanned<f64>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<Spanned<RawSize>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cadence: Option<Spanned<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start: Option<Spanned<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration: Option<Spanned<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gaps: Option<Spanned<f64>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unit: Option<String>,
}

/// A size: a number of bytes, or `{ min, max, distribution }`.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(untagged)]
pub enum RawSize {
    Fixed(u32),
    Range {
        min: u32,
        max: u32,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        distribution: Option<String>,
    },
}

/// `[[designs]]`.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawDesign {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    pub row_key: Spanned<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bucket: Option<Spanned<String>>,
    pub cells: Spanned<String>,
    pub qualifier: Spanned<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<Spanned<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub encoding: Option<Spanned<String>>,
    #[serde(default)]
    pub families: Vec<RawFamily>,
}

/// One of a design's `families = [..]`.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawFamily {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gc: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub series: Option<Vec<String>>,
}

/// `[[queries]]`.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawQuery {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    pub kind: Spanned<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub period: Option<Spanned<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window: Option<Spanned<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub series: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at: Option<Spanned<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top: Option<RawTop>,
}

/// `top = { series = NAME, n = N }`.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawTop {
    pub series: String,
    pub n: usize,
}
