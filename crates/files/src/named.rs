//! Choices read by name (a phase, an operation of a mix, a profile): the one named, or an
//! error that lists them all.

/// The one of `all` whose `name` is `text`, else "'text' is not WHAT; choose from a, b, c".
pub(crate) fn one_of<T: Copy>(
    text: &str,
    all: &[T],
    name: fn(T) -> &'static str,
    what: &str,
) -> Result<T, String> {
    all.iter().copied().find(|&item| name(item) == text).ok_or_else(|| {
        let names: Vec<&str> = all.iter().map(|&item| name(item)).collect();
        format!("'{text}' is not {what}; choose from {}", names.join(", "))
    })
}
