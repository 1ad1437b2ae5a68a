//! Matched probes (MPI's `MPI_Mprobe` / `MPI_Mrecv`): a claimed message is
//! out of matching, so a wildcard receive takes the next one instead.

use grappe::{ANY_SOURCE, ANY_TAG};

#[test]
fn a_claimed_message_is_received_only_by_its_mrecv() {
    let results = grappe::testing::threads(2, |world| -> grappe::Result<Vec<(usize, i32, usize)>> {
        if world.rank() == 1 {
            world.send(&[1u8; 3], 0, 5)?;
            world.send(&[2u8; 7], 0, 6)?;
            world.barrier()?;
            return Ok(Vec::new());
        }
        assert!(world.improbe(1, 9)?.is_none(), "no message with tag 9");
        let claimed = world.mprobe(ANY_SOURCE, ANY_TAG)?;
        let first = claimed.status();
        let mut other = [0u8; 16];
        let next = world.recv(&mut other[..], ANY_SOURCE, ANY_TAG)?;
        let mut mine = vec![0u8; first.bytes];
        let got = world.mrecv(claimed, &mut mine[..])?;
        world.barrier()?;
        assert_eq!(mine, vec![1u8; 3]);
        Ok(vec![
            (first.bytes, first.tag, first.source),
            (next.bytes, next.tag, next.source),
            (got.bytes, got.tag, got.source),
        ])
    });
    let seen = results.into_iter().next().expect("rank 0").expect("rank 0 ran");
    assert_eq!(seen, vec![(3, 5, 1), (7, 6, 1), (3, 5, 1)]);
}

#[test]
fn an_imrecv_completes_with_the_message_s_own_tag() {
    let results = grappe::testing::threads(2, |world| -> grappe::Result<(i32, Vec<u32>)> {
        if world.rank() == 1 {
            world.send(&[7u32, 8, 9], 0, 42)?;
            return Ok((0, Vec::new()));
        }
        let claimed = loop {
            if let Some(message) = world.improbe(ANY_SOURCE, ANY_TAG)? {
                break message;
            }
        };
        let mut buf = vec![0u32; 3];
        let status = world.scope(|scope| world.imrecv(scope, claimed, &mut buf[..])?.wait())?;
        Ok((status.tag, buf))
    });
    let (tag, data) = results.into_iter().next().expect("rank 0").expect("rank 0 ran");
    assert_eq!((tag, data), (42, vec![7, 8, 9]));
}
