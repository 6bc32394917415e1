//! One registry line per algorithm: the [`registry!`](crate::registry!) macro turns
//! the list of a family's algorithms (congestion control, loss recovery, …) into
//!
//! - the dispatch enum (`Cc`), one variant per algorithm holding its state, which
//!   implements the family's trait by forwarding every method (enum dispatch: no
//!   allocation, no virtual call);
//! - the kind enum (`CcKind`): what a configuration names, with `NAMES`, `ALL` (for
//!   test loops), `name()`, `parse()` and `make()` (a fresh algorithm of that kind,
//!   from the family's constructor argument);
//! - serde support for the kind as its name (`"reno"`), with an error listing the
//!   names.
//!
//! Adding an algorithm is one file implementing the trait and one line here;
//! `"name" => Variant(module::Type) [boxed]` keeps a large algorithm's state
//! behind a `Box` (the enum is as large as its largest variant). The
//! shape follows quinn-proto's `congestion/` (a controller per file behind a trait)
//! and smoltcp's sockets (an enum paired with a trait).

/// `registry! { trait Trait(Arg) for Enum, Kind { "name" => Variant(module::Type), … }
/// fn method(&mut self, arg: T, …) -> R; … ref { fn query(&self, …) -> R; … } }` —
/// see the module documentation. The macro declares the trait with those methods
/// (each may carry doc comments; methods taking `&self` go in the optional `ref`
/// block after the others), so a signature is written once. Every algorithm type has `fn new(arg: &Arg) -> Self`.
#[macro_export]
macro_rules! registry {
    (
        $(#[$meta:meta])*
        trait $tr:ident($arg:ty) for $en:ident, $kind:ident $variants:tt
        $( $(#[$fmeta:meta])* fn $f:ident(&mut self $(, $a:ident: $t:ty)* ) $(-> $r:ty)?; )*
        $( ref { $( $(#[$gmeta:meta])* fn $g:ident(&self $(, $b:ident: $u:ty)* ) $(-> $s:ty)?; )* } )?
    ) => {
        $(#[$meta])*
        pub trait $tr {
            $( $(#[$fmeta])* fn $f(&mut self $(, $a: $t)*) $(-> $r)?; )*
            $( $( $(#[$gmeta])* fn $g(&self $(, $b: $u)*) $(-> $s)?; )* )?
        }
        $crate::registry!(@types $en $kind $arg $variants);
        impl $tr for $en {
            $( $crate::registry!(@method $en $variants fn $f($($a: $t),*) $(-> $r)?); )*
            $( $( $crate::registry!(@ref_method $en $variants fn $g($($b: $u),*) $(-> $s)?); )* )?
        }
    };
    (@method $en:ident $variants:tt fn $f:ident($($a:ident: $t:ty),*) $(-> $r:ty)?) => {
        #[inline]
        fn $f(&mut self, $($a: $t),*) $(-> $r)? {
            $crate::registry!(@match self, $en, $f, ($($a),*), $variants)
        }
    };
    (@ref_method $en:ident $variants:tt fn $f:ident($($a:ident: $t:ty),*) $(-> $r:ty)?) => {
        #[inline]
        fn $f(&self, $($a: $t),*) $(-> $r)? {
            $crate::registry!(@match self, $en, $f, ($($a),*), $variants)
        }
    };
    (@match $s:ident, $en:ident, $f:ident, $args:tt, { $( $name:literal => $var:ident($ty:ty) $([$bx:ident])? ),+ $(,)? }) => {
        match $s { $( $en::$var(x) => x.$f $args, )+ }
    };
    // A variant marked `[boxed]` keeps its state behind a `Box`, so a large
    // algorithm does not make every value of the enum as large.
    (@ty $ty:ty) => { $ty };
    (@ty $ty:ty, boxed) => { Box<$ty> };
    (@new $ty:ty, $a:expr) => { <$ty>::new($a) };
    (@new $ty:ty, $a:expr, boxed) => { Box::new(<$ty>::new($a)) };
    (@types $en:ident $kind:ident $arg:ty { $( $name:literal => $var:ident($ty:ty) $([$bx:ident])? ),+ $(,)? }) => {
        /// One algorithm of the family, with its state (enum dispatch).
        #[derive(Clone, Debug)]
        pub enum $en {
            $( $var($crate::registry!(@ty $ty $(, $bx)?)), )+
        }

        /// What a configuration names: one per algorithm of the family.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum $kind {
            $( $var, )+
        }

        impl $kind {
            /// Every kind, in registry order (for test loops).
            pub const ALL: &'static [$kind] = &[$( $kind::$var ),+];
            /// Every name, in registry order.
            pub const NAMES: &'static [&'static str] = &[$( $name ),+];
            pub fn name(self) -> &'static str {
                match self { $( $kind::$var => $name, )+ }
            }
            pub fn parse(s: &str) -> Option<$kind> {
                match s { $( $name => Some($kind::$var), )+ _ => None }
            }
            /// A fresh algorithm of this kind.
            pub fn make(self, arg: &$arg) -> $en {
                match self { $( $kind::$var => $en::$var($crate::registry!(@new $ty, arg $(, $bx)?)), )+ }
            }
            /// The names for error messages: `"a", "b" or "c"`.
            pub fn choices() -> String {
                let q: Vec<String> = Self::NAMES.iter().map(|n| format!("{n:?}")).collect();
                match q.split_last() {
                    Some((last, [])) => last.clone(),
                    Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
                    None => String::new(),
                }
            }
        }

        impl $en {
            /// The kind of the algorithm held.
            pub fn kind(&self) -> $kind {
                match self { $( $en::$var(_) => $kind::$var, )+ }
            }
        }

        impl serde::Serialize for $kind {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.name())
            }
        }

        impl<'de> serde::Deserialize<'de> for $kind {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let s = <String as serde::Deserialize>::deserialize(d)?;
                $kind::parse(&s).ok_or_else(|| serde::de::Error::custom(format!("{s:?} is not one of {}", $kind::choices())))
            }
        }
    };
}
