//! libFuzzer target: `fuzz::receive_delivery` (what it asserts is documented there).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    fuzz::receive_delivery(data);
});
