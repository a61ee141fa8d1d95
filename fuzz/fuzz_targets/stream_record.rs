//! libFuzzer target: `fuzz::stream_record` (what it asserts is documented there).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    fuzz::stream_record(data);
});
