//! [`FieldIdStack`]: the compact protocol's "last field id" per open struct, kept
//! inline for shallow nesting so encoding and decoding a message does not allocate.

const INLINE: usize = 16;

/// A stack of field ids; the first 16 levels live inline.
#[derive(Clone, Debug, Default)]
pub(crate) struct FieldIdStack {
    inline: [i16; INLINE],
    len: usize,
    spill: Vec<i16>,
}

impl FieldIdStack {
    pub(crate) fn push(&mut self, id: i16) {
        if self.len < INLINE {
            self.inline[self.len] = id;
        } else {
            self.spill.push(id);
        }
        self.len += 1;
    }

    /// The id pushed last, or 0 when empty (a top-level struct starts from 0).
    pub(crate) fn pop(&mut self) -> i16 {
        if self.len == 0 {
            return 0;
        }
        self.len -= 1;
        if self.len < INLINE {
            self.inline[self.len]
        } else {
            self.spill.pop().unwrap_or(0)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pops_in_reverse_across_the_inline_boundary() {
        let mut s = FieldIdStack::default();
        for i in 0..40 {
            s.push(i);
        }
        for i in (0..40).rev() {
            assert_eq!(s.pop(), i);
        }
        assert_eq!(s.pop(), 0, "empty stack pops 0");
    }
}
