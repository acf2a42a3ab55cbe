//! cellardb's errors as the gRPC statuses Bigtable answers with.

use tonic::{Code, Status};

/// The status a client of Bigtable would get for `e`: a missing table or
/// family is `NOT_FOUND`, one that exists `ALREADY_EXISTS`, a broken limit
/// or bad input `INVALID_ARGUMENT`; a damaged file is `DATA_LOSS`, and a
/// database that stopped accepting writes `UNAVAILABLE`. The message is
/// cellardb's, which names what was wrong.
pub fn status_of(e: &cellardb::Error) -> Status {
    use cellardb::Error as E;
    let code = match e {
        E::NotFound { .. } => Code::NotFound,
        E::AlreadyExists { .. } => Code::AlreadyExists,
        E::InvalidArgument(_) => Code::InvalidArgument,
        E::Corruption { .. } => Code::DataLoss,
        E::ReadOnly { .. } => Code::FailedPrecondition,
        _ => Code::Unavailable,
    };
    Status::new(code, e.to_string())
}

/// `INVALID_ARGUMENT` with `message`.
pub fn invalid(message: impl Into<String>) -> Status {
    Status::invalid_argument(message)
}
