//! What can be sent and received without serialisation: plain old data.
//!
//! Any `T: bytemuck::Pod` (numbers, arrays, `#[repr(C)]` structs deriving
//! `Pod`) travels as its bytes. Slices, arrays, vectors and single values
//! of primitive types all work as buffers; a single value of your own
//! `Pod` type goes as `std::slice::from_ref(&value)`.

use bytemuck::Pod;

/// A buffer of `Pod` elements that can be sent.
pub trait Buffer {
    /// The element type.
    type Elem: Pod;
    /// The elements.
    fn elems(&self) -> &[Self::Elem];
    /// The bytes to send.
    fn bytes(&self) -> &[u8] {
        bytemuck::cast_slice(self.elems())
    }
    /// Size of one element (to count and check received lengths).
    fn elem_size(&self) -> usize {
        std::mem::size_of::<Self::Elem>()
    }
}

/// A buffer that can be received into.
pub trait BufferMut: Buffer {
    /// The elements, writable.
    fn elems_mut(&mut self) -> &mut [Self::Elem];
    /// The bytes to fill.
    fn bytes_mut(&mut self) -> &mut [u8] {
        bytemuck::cast_slice_mut(self.elems_mut())
    }
}

impl<T: Pod> Buffer for [T] {
    type Elem = T;
    fn elems(&self) -> &[T] {
        self
    }
}

impl<T: Pod> BufferMut for [T] {
    fn elems_mut(&mut self) -> &mut [T] {
        self
    }
}

impl<T: Pod, const N: usize> Buffer for [T; N] {
    type Elem = T;
    fn elems(&self) -> &[T] {
        self
    }
}

impl<T: Pod, const N: usize> BufferMut for [T; N] {
    fn elems_mut(&mut self) -> &mut [T] {
        self
    }
}

impl<T: Pod> Buffer for Vec<T> {
    type Elem = T;
    fn elems(&self) -> &[T] {
        self
    }
}

impl<T: Pod> BufferMut for Vec<T> {
    fn elems_mut(&mut self) -> &mut [T] {
        self
    }
}

macro_rules! scalar_buffers {
    ($($t:ty),*) => {$(
        impl Buffer for $t {
            type Elem = $t;
            fn elems(&self) -> &[$t] {
                std::slice::from_ref(self)
            }
        }
        impl BufferMut for $t {
            fn elems_mut(&mut self) -> &mut [$t] {
                std::slice::from_mut(self)
            }
        }
    )*};
}

scalar_buffers!(u8, i8, u16, i16, u32, i32, u64, i64, u128, i128, usize, isize, f32, f64);
