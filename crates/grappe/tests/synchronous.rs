//! Synchronous sends (MPI's `MPI_Ssend`, `MPI_Issend`): they complete only
//! once the receiver has matched them, even below the eager limit.

#[test]
fn an_issend_stays_pending_until_its_receive_is_posted_whatever_its_size() {
    for len in [0usize, 8, 1 << 10, 1 << 20] {
        let results = grappe::testing::threads(2, |world| -> grappe::Result<Vec<u8>> {
            let data = vec![7u8; len];
            if world.rank() == 0 {
                world.scope(|scope| -> grappe::Result<Vec<u8>> {
                    let mut request = world.issend(scope, &data[..], 1, 5)?;
                    let early = request.test()?.is_some();
                    world.barrier()?;
                    request.wait()?;
                    Ok(vec![early as u8])
                })
            } else {
                world.barrier()?;
                let mut buf = vec![0u8; len];
                world.recv(&mut buf[..], 0, 5)?;
                Ok(buf)
            }
        });
        let results: Vec<Vec<u8>> = results.into_iter().map(|r| r.expect("rank")).collect();
        assert_eq!(results[0], vec![0], "{len} bytes: the issend completed before the receive was posted");
        assert_eq!(results[1], vec![7u8; len], "{len} bytes arrive");
    }
}

#[test]
fn an_ssend_returns_once_the_receiver_took_the_message() {
    let results = grappe::testing::threads(2, |world| -> grappe::Result<u64> {
        if world.rank() == 0 {
            world.ssend(&[42u64], 1, 3)?;
            let mut order = [0u64];
            world.recv(&mut order, 1, 4)?;
            Ok(order[0])
        } else {
            let mut got = [0u64];
            world.recv(&mut got, 0, 3)?;
            world.send(&[got[0] + 1], 0, 4)?;
            Ok(got[0])
        }
    });
    assert_eq!(results.into_iter().map(|r| r.unwrap()).collect::<Vec<_>>(), vec![43, 42]);
}
