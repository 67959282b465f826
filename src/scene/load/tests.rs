use super::*;

fn error_of(text: &str) -> String {
    format!("{:#}", parse(text).unwrap_err())
}

#[test]
fn unknown_key_names_line_column_and_suggests() {
    let message = error_of("[simulation]\nfps = 24.0\nsubstep = 4\n");
    assert!(message.starts_with("3:1: "), "{message}");
    assert!(message.contains("unknown field `substep`"), "{message}");
    assert!(message.contains("did you mean `substeps`?"), "{message}");
}

#[test]
fn wrong_type_names_the_key_path() {
    let message = error_of(
        "[[object]]\nname = \"a\"\ngrid = { size = [1.0, 1.0], resolution = [4, \"x\"] }\n",
    );
    assert!(
        message.contains("object[0].grid.resolution[1]"),
        "{message}"
    );
    assert!(message.starts_with("3:"), "{message}");
}

#[test]
fn unknown_variant_suggests() {
    let message = error_of("[simulation]\nsolver = \"xbpd\"\n");
    assert!(message.contains("did you mean `xpbd`?"), "{message}");
}

#[test]
fn nan_and_inf_are_refused_with_the_key() {
    let message = error_of("[simulation]\nfps = nan\n");
    assert!(message.contains("simulation.fps"), "{message}");
    assert!(message.starts_with("2:7: "), "{message}");
    let message = error_of("[simulation]\ngravity = [0.0, -inf, 0.0]\n");
    assert!(message.contains("simulation.gravity[1]"), "{message}");
}

#[test]
fn nan_is_located_in_the_right_table_even_when_the_key_repeats() {
    let text = "[[object]]\nname = \"a\"\ndensity = 1.0\n[[object]]\nname = \"b\"\ndensity = nan\n";
    let message = error_of(text);
    assert!(
        message.starts_with("6:11: object[1].density: nan"),
        "{message}"
    );
    let message = error_of("[simulation]\nvelocity_damping = 0.0\ngravity = [0.0, inf, 0.0]\n");
    assert!(
        message.starts_with("3:17: simulation.gravity[1]: inf"),
        "{message}"
    );
}

#[test]
fn columns_count_characters_not_bytes() {
    let message = error_of("[[object]]\nname = \"é\" ; x = 1\n");
    assert!(message.starts_with("2:"), "{message}");
    // `=` is byte 3 but the third character.
    assert_eq!(line_column("é = x", 3), (1, 3, "é = x"));
}

#[test]
fn set_values_that_are_not_toml_are_refused() {
    assert!(parse_value("1e309").is_err());
    assert!(parse_value("1.5.5").is_err());
    assert_eq!(
        parse_value("pbd").unwrap(),
        toml::Value::String("pbd".into())
    );
    assert_eq!(parse_value("40").unwrap(), toml::Value::Integer(40));
}

#[test]
fn long_lines_are_shown_around_the_column() {
    let line = format!("a = [{}x]", "1, ".repeat(1000));
    let message = error_of(&line);
    let shown: Vec<&str> = message.lines().skip(1).collect();
    assert!(
        shown[0].chars().count() < crate::quote::MAX_QUOTED + 10,
        "{message}"
    );
    assert!(shown[0].starts_with("    | …") && shown[0].ends_with("x]"));
    // The caret still points at the `x`.
    let caret = shown[1].chars().count() - 1;
    assert_eq!(shown[0].chars().nth(caret), Some('x'), "{message}");
    assert_eq!(window("short", 3), ("short".to_string(), 3));
}

#[test]
fn megabyte_keys_give_short_messages() {
    let key = "k".repeat(1_000_000);
    for text in [
        format!("[simulation]\n{key} = 1\n"),
        format!("[simulation]\nsolver = \"{key}\"\n"),
        format!("[simulation]\n{key} = nan\n"),
    ] {
        let message = error_of(&text);
        assert!(message.len() < 1000, "{} bytes", message.len());
    }
    // A megabyte key in a --set override (found by the fuzzer: the key path of the
    // unknown field was printed whole).
    let error = apply_overrides("", &[format!("simulation.{key}=1")]).unwrap_err();
    let message = format!("{error:#}");
    assert!(message.len() < 1000, "{} bytes", message.len());
    // A key holding backticks and newlines (also the fuzzer's): it shifted which parts
    // of serde's message were quoted, and its newlines made lines of their own.
    let key = format!("a`{}\n`{}", "b\n".repeat(2000), "c".repeat(3000));
    let many = "`x".repeat(3000);
    for key in [key, many] {
        let error = apply_overrides("", &[format!("{key}=1")]).unwrap_err();
        let message = format!("{error:#}");
        assert!(
            message.lines().count() == 1 && message.len() < 1000,
            "{message}"
        );
    }
    // The same in the scene file, as a TOML quoted key.
    let many = "`y".repeat(3000);
    let message = error_of(&format!("\"{many}\" = 1\n"));
    assert!(message.lines().all(|l| l.len() < 1000), "{message}");
}

/// A long string where a number goes: the string is cut, what was expected is still said
/// (the whole message used to be cut after its first 100 characters).
#[test]
fn a_long_string_of_the_wrong_type_keeps_what_was_expected() {
    for length in [90, 150, 1_000_000] {
        let text = format!("[simulation]\nsubsteps = \"{}\"\n", "a".repeat(length));
        let message = error_of(&text);
        let first = message.lines().next().unwrap();
        assert!(
            first.ends_with("expected a whole number >= 0"),
            "{length}: {first}"
        );
        assert!(first.len() < 300, "{length}: {} bytes", first.len());
    }
    let message = error_of(&format!(
        "[simulation]\nsolver = {{ a = \"{}\" }}\n",
        "b".repeat(500)
    ));
    assert!(message.len() < 1000, "{message}");
}

#[test]
fn syntax_error_has_a_position() {
    let message = error_of("[simulation\nfps = 1\n");
    assert!(message.starts_with("1:"), "{message}");
}

#[test]
fn overrides_address_objects_by_name_and_parse_values() {
    let text = "[simulation]\nsubsteps = 4\n[[object]]\nname = \"cloth\"\nbending = { compliance = 1.0 }\n";
    let file = apply_overrides(
        text,
        &[
            "simulation.substeps=40".into(),
            "object.cloth.bending.compliance=1e-4".into(),
            "simulation.solver=pbd".into(),
            "simulation.gravity=[0, 0, 0]".into(),
        ],
    )
    .unwrap();
    assert_eq!(file.simulation.substeps, 40);
    assert_eq!(
        file.objects[0].bending.as_ref().unwrap().compliance,
        Some(1e-4)
    );
    assert_eq!(file.simulation.gravity, [0.0; 3]);
    let message = format!(
        "{:#}",
        apply_overrides(text, &["object.shirt.bending.compliance=1".into()]).unwrap_err()
    );
    assert!(message.contains("no object named `shirt`"), "{message}");
    let message = format!(
        "{:#}",
        apply_overrides(text, &["simulation.substep=3".into()]).unwrap_err()
    );
    assert!(message.contains("did you mean `substeps`?"), "{message}");
}

#[test]
fn gate_overrides_are_checked_and_become_set_overrides() {
    assert_eq!(gate_override("max_speed=3").unwrap(), "gates.max_speed=3.0");
    assert_eq!(
        gate_override("self_intersections=0").unwrap(),
        "gates.self_intersections=0"
    );
    let error = |a: &str| format!("{:#}", gate_override(a).unwrap_err());
    let message = error("max_strain=0.1");
    assert!(
        message.contains("did you mean `max_edge_strain`?"),
        "{message}"
    );
    for (bad, expected) in [
        ("max_speed=-1", "gates.max_speed: must be >= 0"),
        (
            "max_speed=nan",
            "gates.max_speed: nan is not a finite number",
        ),
        ("max_speed=fast", "gates.max_speed: `fast` is not a number"),
        (
            "self_intersections=1.5",
            "gates.self_intersections: expected a whole number",
        ),
    ] {
        let message = error(bad);
        assert!(message.contains(expected), "{bad}: {message}");
    }
    // Applied like --set, the value reads back as the table's type.
    let file = apply_overrides(
        "",
        &[
            gate_override("max_speed=3").unwrap(),
            gate_override("self_intersections=2").unwrap(),
        ],
    )
    .unwrap();
    assert_eq!(file.gates.max_speed, Some(3.0));
    assert_eq!(file.gates.self_intersections, Some(2));
}

#[test]
fn a_misspelt_gate_in_the_table_gets_a_suggestion() {
    let message = error_of("[gates]\nmax_sped = 3\n");
    assert!(message.contains("did you mean `max_speed`?"), "{message}");
    // Whole numbers are fine for the fractional gates.
    assert_eq!(
        parse("[gates]\nmax_speed = 3\n").unwrap().gates.max_speed,
        Some(3.0)
    );
}

#[test]
fn edit_distance_counts_single_edits() {
    assert_eq!(edit_distance("substep", "substeps"), 1);
    assert_eq!(edit_distance("xbpd", "xpbd"), 1);
    assert_eq!(edit_distance("", "abc"), 3);
}
