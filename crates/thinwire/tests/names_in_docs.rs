//! Every name list is generated from one description (`registry!`,
//! `tagged_enum!`, `vocabulary!`); this keeps docs/scenario.md's tables of names
//! equal to them, so a new algorithm, protocol, model, application or layer is
//! documented where users look, and a removed one leaves no stale row.
use std::collections::BTreeSet;
use std::path::Path;

fn doc() -> String {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/scenario.md");
    std::fs::read_to_string(p).expect("docs/scenario.md")
}

/// The `name`s quoted in backticks in the second cell of the table row whose
/// first cell is `first`.
fn row_names(doc: &str, first: &str) -> BTreeSet<String> {
    let line = doc.lines().find(|l| l.starts_with(&format!("| {first} |"))).unwrap_or_else(|| panic!("no row {first}"));
    let cell = line.split('|').nth(2).expect("a second cell");
    cell.split('`').skip(1).step_by(2).map(str::to_string).collect()
}

/// The first cells (backticked names) of the table whose header row is `header`.
fn table_keys(doc: &str, header: &str) -> BTreeSet<String> {
    let mut lines = doc.lines().skip_while(|l| !l.starts_with(header)).skip(2);
    let mut out = BTreeSet::new();
    for l in lines.by_ref() {
        if !l.starts_with("| `") {
            break;
        }
        out.insert(l.split('`').nth(1).unwrap().to_string());
    }
    out
}

fn set(names: &[&str]) -> BTreeSet<String> {
    names.iter().map(|s| s.to_string()).collect()
}

#[test]
fn the_documented_names_are_the_generated_ones() {
    use thinwire::config::{flow::APPS, link::MODELS, link::PROTOCOLS};
    let d = doc();
    assert_eq!(row_names(&d, "`[wireless.channel] model`"), set(MODELS));
    assert_eq!(row_names(&d, "`[trace] layers`"), set(thinwire::trace::LAYERS));
    assert_eq!(table_keys(&d, "| discipline |"), set(thinwire::queue::QdiscKind::NAMES));
    // Rows that also quote other things (files, fields): every name is there.
    for (row, names) in [
        ("`[wireless.arq] protocol`", PROTOCOLS),
        ("`[[flow]] app`", APPS),
        ("`cc`", thinwire::tcp::CcKind::NAMES),
        ("`recovery`", thinwire::tcp::RecoveryKind::NAMES),
    ] {
        let quoted = row_names(&d, row);
        let missing: Vec<_> = names.iter().filter(|n| !quoted.contains(**n)).collect();
        assert!(missing.is_empty(), "docs/scenario.md's row {row} lacks {missing:?}");
    }
}
