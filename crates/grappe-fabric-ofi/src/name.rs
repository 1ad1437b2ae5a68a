//! An endpoint's name as text, for a key-value space of strings (PMI's):
//! its bytes in lowercase hexadecimal.

/// Text that is not an endpoint name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NameError {
    /// Empty, or an odd number of digits.
    #[error("an endpoint name is an even, non-zero number of hexadecimal digits, this one has {digits}")]
    Length {
        /// Characters given.
        digits: usize,
    },
    /// A character that is not a hexadecimal digit.
    #[error("character {at} of the endpoint name is {found:?}, not a hexadecimal digit")]
    Digit {
        /// Its position (in characters).
        at: usize,
        /// The character.
        found: char,
    },
}

/// An endpoint's name ([`Endpoint::name`](crate::Endpoint::name)) as
/// text to publish.
pub fn name_to_text(name: &[u8]) -> String {
    name.iter().map(|byte| format!("{byte:02x}")).collect()
}

/// The name [`name_to_text`] wrote (either case).
pub fn name_from_text(text: &str) -> Result<Vec<u8>, NameError> {
    let digits: Vec<char> = text.chars().collect();
    if digits.is_empty() || digits.len() % 2 == 1 {
        return Err(NameError::Length { digits: digits.len() });
    }
    let value = |at: usize| digits[at].to_digit(16).ok_or(NameError::Digit { at, found: digits[at] });
    (0..digits.len() / 2).map(|i| Ok((value(2 * i)? * 16 + value(2 * i + 1)?) as u8)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn names_round_trip(name in proptest::collection::vec(any::<u8>(), 1..300)) {
            prop_assert_eq!(name_from_text(&name_to_text(&name)), Ok(name.clone()));
            prop_assert_eq!(name_from_text(&name_to_text(&name).to_uppercase()), Ok(name));
        }
    }

    #[test]
    fn bad_text_is_named() {
        assert_eq!(name_from_text(""), Err(NameError::Length { digits: 0 }));
        assert_eq!(name_from_text("abc"), Err(NameError::Length { digits: 3 }));
        assert_eq!(name_from_text("0g"), Err(NameError::Digit { at: 1, found: 'g' }));
        assert_eq!(name_from_text("éé"), Err(NameError::Digit { at: 0, found: 'é' }));
    }
}
