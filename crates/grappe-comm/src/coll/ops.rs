//! Reduction operations.
//!
//! An operation combines an accumulator holding the contribution of lower
//! ranks with the contribution of a higher rank: `acc = acc ⊕ later`.
//! Collectives always combine in rank order when the operation is not
//! commutative, so user operations only need to be associative.

use std::ops::{Add, BitAnd as And, BitOr as Or, BitXor as Xor, Mul};

/// A reduction operation on elements of type `T`.
pub trait Operation<T>: Sync {
    /// `acc[i] = acc[i] ⊕ later[i]` for every element.
    fn combine(&self, acc: &mut [T], later: &[T]);
    /// True if `a ⊕ b == b ⊕ a` (lets collectives choose freer orders).
    fn is_commutative(&self) -> bool {
        true
    }
}

/// `MPI_SUM`
#[derive(Debug, Clone, Copy, Default)]
pub struct Sum;
/// `MPI_PROD`
#[derive(Debug, Clone, Copy, Default)]
pub struct Prod;
/// `MPI_MIN`
#[derive(Debug, Clone, Copy, Default)]
pub struct Min;
/// `MPI_MAX`
#[derive(Debug, Clone, Copy, Default)]
pub struct Max;
/// `MPI_BAND`
#[derive(Debug, Clone, Copy, Default)]
pub struct BitAnd;
/// `MPI_BOR`
#[derive(Debug, Clone, Copy, Default)]
pub struct BitOr;
/// `MPI_BXOR`
#[derive(Debug, Clone, Copy, Default)]
pub struct BitXor;

macro_rules! elementwise {
    ($op:ty, $bound:path, |$a:ident, $b:ident| $body:expr) => {
        impl<T: Copy + $bound + Sync> Operation<T> for $op {
            #[inline]
            fn combine(&self, acc: &mut [T], later: &[T]) {
                for ($a, &$b) in acc.iter_mut().zip(later) {
                    *$a = $body;
                }
            }
        }
    };
}

elementwise!(Sum, Add<Output = T>, |a, b| *a + b);
elementwise!(Prod, Mul<Output = T>, |a, b| *a * b);
elementwise!(BitAnd, And<Output = T>, |a, b| *a & b);
elementwise!(BitOr, Or<Output = T>, |a, b| *a | b);
elementwise!(BitXor, Xor<Output = T>, |a, b| *a ^ b);
elementwise!(Min, PartialOrd, |a, b| if b < *a { b } else { *a });
elementwise!(Max, PartialOrd, |a, b| if b > *a { b } else { *a });

/// A user operation from a closure `|acc, later| *acc = *acc ⊕ *later`.
pub struct UserOp<F> {
    f: F,
    commutative: bool,
}

impl<F> UserOp<F> {
    /// An associative and commutative operation.
    pub fn commutative(f: F) -> UserOp<F> {
        UserOp { f, commutative: true }
    }

    /// An associative operation whose operands may not be swapped:
    /// results are combined strictly in rank order.
    pub fn non_commutative(f: F) -> UserOp<F> {
        UserOp { f, commutative: false }
    }
}

impl<T, F: Fn(&mut T, &T) + Sync> Operation<T> for UserOp<F> {
    fn combine(&self, acc: &mut [T], later: &[T]) {
        for (a, b) in acc.iter_mut().zip(later) {
            (self.f)(a, b);
        }
    }

    fn is_commutative(&self) -> bool {
        self.commutative
    }
}

impl<F> std::fmt::Debug for UserOp<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UserOp").field("commutative", &self.commutative).finish()
    }
}

/// An operation lent to a collective: the same operation can serve many
/// calls (`world.allreduce(&x, &mut y, &op)`).
impl<T, O: Operation<T> + ?Sized> Operation<T> for &O {
    #[inline]
    fn combine(&self, acc: &mut [T], later: &[T]) {
        (**self).combine(acc, later)
    }

    fn is_commutative(&self) -> bool {
        (**self).is_commutative()
    }
}
