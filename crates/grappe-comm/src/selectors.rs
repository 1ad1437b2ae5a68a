//! Who a receive accepts messages from, and with which tag.

/// Largest valid tag (MPI's `MPI_TAG_UB`).
pub const TAG_UB: i32 = i32::MAX;

/// The source a receive or probe accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Source {
    /// Only this rank of the communicator.
    Rank(usize),
    /// Any rank (`MPI_ANY_SOURCE`).
    Any,
}

/// Accept a message from any rank.
pub const ANY_SOURCE: Source = Source::Any;

impl From<usize> for Source {
    fn from(rank: usize) -> Source {
        Source::Rank(rank)
    }
}

/// The tag a receive or probe accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Tag {
    /// Only this tag.
    Is(i32),
    /// Any tag (`MPI_ANY_TAG`).
    Any,
}

/// Accept a message with any tag.
pub const ANY_TAG: Tag = Tag::Any;

impl From<i32> for Tag {
    fn from(tag: i32) -> Tag {
        Tag::Is(tag)
    }
}
