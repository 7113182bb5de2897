//! Prints the paths of the test guests as one JSON object (`{"recorder": "...", ...}`): the
//! Python package's tests (`python/tests`) read them, as the Rust tests read the constants.

fn main() {
    let guests = [
        ("recorder", lens_test_guests::RECORDER),
        ("hostile", lens_test_guests::HOSTILE),
        ("processor", lens_test_guests::PROCESSOR),
        ("wat_exporter", lens_test_guests::WAT_EXPORTER),
        ("many_memories", lens_test_guests::MANY_MEMORIES),
    ];
    let fields: Vec<String> = guests
        .iter()
        .map(|(name, path)| format!("{name:?}: {path:?}"))
        .collect();
    println!("{{{}}}", fields.join(", "));
}
