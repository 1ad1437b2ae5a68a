//! Records over a link between two endpoints of one process.

mod common;

use common::{link_pair, next_event, pattern, providers};
use grappe_fabric_ofi::Matching;

#[test]
fn smoke() {
    for provider in providers() {
        let (mut a, mut b) = link_pair(&provider, Matching::Auto);
        assert!(a.try_push([1, 2, 3, 4], b"hello").unwrap());
        assert_eq!(next_event(&mut b, &mut a).unwrap(), ([1, 2, 3, 4], b"hello".to_vec()));
        let big = pattern(7, 1 << 20);
        assert!(b.try_push([5; 4], &big).unwrap());
        assert_eq!(next_event(&mut a, &mut b).unwrap(), ([5; 4], big));
    }
}
