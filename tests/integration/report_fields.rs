//! docs/reports.md lists the record's normalized fields exactly as the one table in the code
//! (`model::fields::NORMALIZED_FIELDS`) has them, and every exporter names them the same.

use polyprof::model::NORMALIZED_FIELDS;
use polyprof::results::export::csv::COLUMNS;

use crate::support::fixture;

fn documented() -> Vec<String> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/reports.md");
    let text = std::fs::read_to_string(path).unwrap();
    let start = text
        .find("<!-- normalized fields")
        .expect("the normalized fields list in docs/reports.md");
    let end = text.find("<!-- /normalized fields -->").unwrap();
    text[start..end]
        .lines()
        .filter(|l| l.starts_with("| `"))
        .map(str::to_string)
        .collect()
}

#[test]
fn the_docs_list_every_normalized_field_with_its_unit() {
    let generated: Vec<String> = NORMALIZED_FIELDS
        .iter()
        .map(|f| {
            let unit = if f.unit.is_empty() { "(count)" } else { f.unit };
            format!("| `{}` | {unit} | {} |", f.name, f.meaning)
        })
        .collect();
    assert_eq!(
        documented(),
        generated,
        "docs/reports.md's normalized fields list is stale; it should read:\n{}",
        generated.join("\n")
    );
}

#[test]
fn every_field_is_a_json_key_and_a_csv_column_of_the_same_name() {
    let run = polyprof::ProfileRun::read(&fixture("runs/h200-baseline")).unwrap();
    let record = serde_json::to_value(&run.kernels[0]).unwrap();
    for field in NORMALIZED_FIELDS {
        assert!(COLUMNS.contains(&field.name), "{}", field.name);
        // Every field this real record has is under its own name in the JSON.
        // (`dram_bytes` reads as read + write where the record has no total.)
        if let Some(value) = (field.get)(&run.kernels[0])
            && (field.name != "dram_bytes" || run.kernels[0].dram_bytes.is_some())
        {
            assert_eq!(record[field.name].as_f64(), Some(value), "{}", field.name);
        }
    }
}
