//! Properties of the protocol's framing, over an in-memory pipe.

use std::io::{Cursor, Read, Write};

use grappe_ft::wire::{Conn, MAX_CHUNK, MAX_KEPT, Request};
use proptest::prelude::*;

/// Reads from what was written before.
struct Pipe {
    input: Cursor<Vec<u8>>,
    output: Vec<u8>,
}

impl Read for Pipe {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.input.read(buf)
    }
}

impl Write for Pipe {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.output.write(buf)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn writer() -> Conn<Pipe> {
    Conn::new(Pipe { input: Cursor::new(Vec::new()), output: Vec::new() }, "writer")
}

fn reader(bytes: Vec<u8>) -> Conn<Pipe> {
    Conn::new(Pipe { input: Cursor::new(bytes), output: Vec::new() }, "reader")
}

/// The bytes of an image as sent.
fn encoded(image: &[u8]) -> Vec<u8> {
    let mut w = writer();
    w.send_stream(&mut &image[..], "test image").unwrap();
    w.get_ref().output.clone()
}

fn request() -> impl Strategy<Value = Request> {
    prop_oneof![
        (any::<u64>(), any::<u32>()).prop_map(|(wave, rank)| Request::Put { wave, rank }),
        (any::<u64>(), any::<u32>()).prop_map(|(wave, rank)| Request::Get { wave, rank }),
        any::<u64>().prop_map(|wave| Request::Commit { wave }),
        prop::collection::vec(any::<u64>(), 0..=MAX_KEPT).prop_map(|waves| Request::Keep { waves }),
        Just(Request::Waves),
    ]
}

proptest! {
    /// Sizes across the chunk boundary; the bytes from a seed (drawing a
    /// megabyte byte by byte would make the test slow, not better).
    #[test]
    fn images_stream_back_whole(len in 0..3 * MAX_CHUNK / 2, seed in any::<u64>()) {
        let mut x = seed | 1;
        let image: Vec<u8> = (0..len).map(|_| { x ^= x << 13; x ^= x >> 7; x ^= x << 17; x as u8 }).collect();
        let mut got = Vec::new();
        let end = reader(encoded(&image)).recv_stream(&mut got).unwrap();
        prop_assert_eq!(end.total, image.len() as u64);
        prop_assert_eq!(end.crc, crc32fast::hash(&image));
        prop_assert_eq!(got, image);
    }

    /// A changed byte or a cut anywhere is an error, never a wrong image.
    #[test]
    fn damage_is_never_taken_for_an_image(
        image in prop::collection::vec(any::<u8>(), 1..5000),
        at in any::<prop::sample::Index>(),
        flip in 1u8..=255,
        cut in any::<bool>(),
    ) {
        let mut bytes = encoded(&image);
        let at = at.index(bytes.len());
        if cut { bytes.truncate(at) } else { bytes[at] ^= flip }
        let mut got = Vec::new();
        match reader(bytes).recv_stream(&mut got) {
            Ok(_) => prop_assert!(false, "damage at byte {at} went unnoticed"),
            Err(e) => prop_assert!(e.to_string().contains("reader at byte"), "{e}"),
        }
    }

    #[test]
    fn requests_round_trip(requests in prop::collection::vec(request(), 0..20)) {
        let mut w = writer();
        for r in &requests {
            w.send_request(r.clone()).unwrap();
        }
        let mut r = reader(w.get_ref().output.clone());
        for sent in &requests {
            prop_assert_eq!(r.read_request().unwrap(), Some(sent.clone()));
        }
        prop_assert_eq!(r.read_request().unwrap(), None);
    }

    #[test]
    fn statuses_and_texts_round_trip(reason in ".{0,300}") {
        let mut w = writer();
        w.send_status(Ok(())).unwrap();
        w.send_status(Err(&reason)).unwrap();
        let mut r = reader(w.get_ref().output.clone());
        r.read_status().unwrap();
        let refused = r.read_status().unwrap_err();
        prop_assert!(refused.to_string().ends_with(&reason));
    }
}

#[test]
fn oversized_fields_are_refused_before_any_allocation() {
    let huge_chunk = (MAX_CHUNK as u32 + 1).to_le_bytes().to_vec();
    let err = reader(huge_chunk).recv_stream(&mut Vec::new()).unwrap_err();
    assert!(err.to_string().contains("a chunk of at most 1048576 bytes"), "{err}");
    let err = reader(vec![b'Z']).read_request().unwrap_err();
    assert!(err.to_string().contains("reader at byte 0: expected a request"), "{err}");
    let err = reader(vec![b'K', MAX_KEPT as u8 + 1]).read_request().unwrap_err();
    assert!(err.to_string().contains("at most 8 waves kept, not 9"), "{err}");
    let too_many = Request::Keep { waves: vec![1; MAX_KEPT + 1] };
    assert!(writer().send_request(too_many).is_err(), "a keep request longer than a server reads is refused");
    let err = reader(vec![0xff, 0xff]).read_text("job name").unwrap_err();
    assert!(err.to_string().contains("job name of at most 4096 bytes"), "{err}");
}

#[test]
fn a_bad_job_name_says_what_is_wrong_with_it() {
    use grappe_ft::wire::{JobNameProblem, MAX_JOB_NAME, check_job};
    let long = "j".repeat(MAX_JOB_NAME + 1);
    for (name, problem) in [
        ("", JobNameProblem::Empty),
        (&long[..], JobNameProblem::TooLong { bytes: MAX_JOB_NAME + 1 }),
        (".hidden", JobNameProblem::LeadingDot),
        ("a/../b", JobNameProblem::Byte { at: 1, byte: b'/' }),
    ] {
        let error = check_job(name).unwrap_err();
        assert_eq!((error.name.as_str(), error.problem), (name, problem));
        assert!(error.to_string().starts_with(&format!("job name {name:?}: ")), "{error}");
    }
    assert_eq!(
        check_job("a/b").unwrap_err().to_string(),
        "job name \"a/b\": byte 1 is /; expected 1 to 64 of A-Z a-z 0-9 _ . - (no leading dot)"
    );
    assert!(check_job(&"j".repeat(MAX_JOB_NAME)).is_ok() && check_job("grappe-1f.x_y").is_ok());
}
