//! Result structs for methods without declared exceptions: [`Returns`] and [`Void`].
//! A method that declares exceptions has a hand-written result struct with the
//! success value at field 0 and each exception at its declared id.

use super::codec::{read_field, read_struct, write_field, ThriftDecode, ThriftEncode, ThriftType};
use super::error::DecodeError;
use super::protocol::{ProtocolRead, ProtocolWrite, TType};

/// The result struct of a method returning `T`: `struct { 0: T success }`.
#[derive(Clone, Debug, PartialEq)]
pub struct Returns<T>(pub T);

impl<T> ThriftType for Returns<T> {
    const TTYPE: TType = TType::Struct;
}

impl<T: ThriftEncode> ThriftEncode for Returns<T> {
    fn encode<W: ProtocolWrite>(&self, w: &mut W) {
        w.write_struct_begin();
        write_field(w, 0, &self.0);
        w.write_field_stop();
        w.write_struct_end();
    }
}

impl<T: ThriftDecode> ThriftDecode for Returns<T> {
    fn decode<R: ProtocolRead>(r: &mut R) -> Result<Self, DecodeError> {
        let mut value = None;
        read_struct(r, |r, h| {
            if h.id == 0 {
                value = read_field::<_, T>(r, h)?;
                return Ok(true);
            }
            Ok(false)
        })?;
        value
            .map(Returns)
            .ok_or(DecodeError::MissingResult("result"))
    }
}

/// The result struct of a `void` method without exceptions: `struct {}` (fields a
/// peer adds are skipped).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Void;

impl ThriftType for Void {
    const TTYPE: TType = TType::Struct;
}

impl ThriftEncode for Void {
    fn encode<W: ProtocolWrite>(&self, w: &mut W) {
        w.write_struct_begin();
        w.write_field_stop();
        w.write_struct_end();
    }
}

impl ThriftDecode for Void {
    fn decode<R: ProtocolRead>(r: &mut R) -> Result<Self, DecodeError> {
        read_struct(r, |_, _| Ok(false))?;
        Ok(Void)
    }
}
