//! One description of every result field. A result struct is declared once with
//! `described!`: that gives the struct (with `serde::Serialize`, so it reaches
//! Python as it is) and its `FIELDS` table (name, unit, kind, table label and
//! group, doc), from which the Python side takes the sweep's metric columns and the
//! command line's summary tables. A new counter is one field in one place.
//!
//! Kinds: `metric` (sweeps aggregate it: mean, sd, 95 % CI), `info` (reported,
//! not aggregated), `hidden` (kept for computing others, not reported).
use serde::Serialize;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Field {
    pub name: &'static str,
    /// `count`, `bytes`, `bit/s`, `s`, `ns`, `ratio`, `bool`, `text`, `list`.
    pub unit: &'static str,
    /// `metric`, `info` or `hidden`.
    pub kind: &'static str,
    /// Column header in the command line's summary table ("" = not shown).
    pub label: &'static str,
    /// Which table of the summary the column belongs to ("" = the struct's own).
    pub group: &'static str,
    pub doc: &'static str,
}

/// Declares a result struct and its field table. Each field:
/// `/// doc` then `pub name: Type => (kind, "unit", "label", "group")`.
#[macro_export]
macro_rules! described {
    (
        $(#[$sattr:meta])*
        pub struct $name:ident {
            $(
                $(#[doc = $doc:literal])*
                $(#[serde($($s:tt)*)])?
                pub $field:ident : $ty:ty => ($kind:ident, $unit:literal, $label:literal, $group:literal)
            ),* $(,)?
        }
    ) => {
        $(#[$sattr])*
        #[derive(serde::Serialize)]
        pub struct $name {
            $(
                $(#[doc = $doc])*
                $(#[serde($($s)*)])?
                pub $field: $ty,
            )*
        }
        $( $crate::__described_kind!($kind); )*
        impl $name {
            /// Every field of this result, in declaration order.
            pub const FIELDS: &'static [$crate::describe::Field] = &[
                $(
                    $crate::describe::Field {
                        name: stringify!($field),
                        unit: $unit,
                        kind: stringify!($kind),
                        label: $label,
                        group: $group,
                        doc: concat!($($doc),*),
                    },
                )*
            ];
        }
    };
}

/// Accepts only the three kinds (a typo is a compile error).
#[doc(hidden)]
#[macro_export]
macro_rules! __described_kind {
    (metric) => {};
    (info) => {};
    (hidden) => {};
}
