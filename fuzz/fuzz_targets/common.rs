//! What every target checks of a message beyond "no panic": it quotes input in pieces of at
//! most 100 characters (docs/scene-format.md, "Hostile input"), so no line of it can be long.
//! A line over [`MAX_MESSAGE_LINE`] means some input was echoed whole.

/// Longest message line accepted: a few quoted pieces and the words around them.
const MAX_MESSAGE_LINE: usize = 1_000;

pub fn check_message(message: &str) {
    if let Some(line) = message
        .lines()
        .find(|line| line.chars().count() > MAX_MESSAGE_LINE)
    {
        let start: String = line.chars().take(300).collect();
        panic!(
            "a message line of {} characters: {start}…",
            line.chars().count()
        );
    }
}
