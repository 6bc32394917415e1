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
//!   names;
//! - for a family whose algorithms take parameters of their own (queue
//!   disciplines, link protocols: `sections QueueCfg: QueueSection`), the tagged
//!   scenario section of any of them (`QueueCfg`), each variant the section its
//!   algorithm's file declares (`schema::Configured`).
//!
//! Adding an algorithm is one file implementing the trait and one line in the
//! family's registry;
//! `"name" => Variant(module::Type) [boxed]` keeps a large algorithm's state
//! behind a `Box` (the enum is as large as its largest variant). The
//! shape follows quinn-proto's `congestion/` (a controller per file behind a trait)
//! and smoltcp's sockets (an enum paired with a trait).

/// `registry! { trait Trait(Arg) for #[derive(…)] Enum, Kind { "name" => Variant(module::Type), … }
/// fn method(&mut self, arg: T, …) -> R; … ref { fn query(&self, …) -> R; … }
/// provided mut { fn hook(&mut self, …) -> R { default body } … }
/// provided ref { fn ask(&self, …) -> R { default body } … } }` — see the module
/// documentation. The macro declares the trait with those methods (each may carry
/// doc comments; methods taking `&self` go in the optional `ref` block after the
/// others; methods with a default body, which an algorithm may leave out, in the
/// optional `provided mut` and `provided ref` blocks), so a signature is written
/// once (the `self` of a default body is the caller's, for hygiene). With `(Arg)`, every algorithm type has `fn new(arg: &Arg) -> Self` and
/// the kind gets `make`; without it (a family whose members are built from
/// configurations of their own, as the link protocols) there is no `make`.
/// With `sections Cfg: SectionTrait` before `for`, every algorithm type names
/// its scenario section (`schema::Configured`), and the macro generates `Cfg`,
/// the tagged section of any algorithm (`kind`, `get` as `&dyn SectionTrait`,
/// `default_of`, `parse`): a family whose members take parameters of their own
/// keeps them, their checks and their defaults in the algorithm's file.
///
/// Beside the dispatch, every algorithm type converts into the enum (`From`) and
/// a reference to the enum converts back to one to its type (`TryFrom`, failing
/// with the kind held): a test that needs one algorithm's own counters asks for
/// that type instead of matching variants.
#[macro_export]
macro_rules! registry {
    (
        $(#[$meta:meta])*
        trait $tr:ident $(($arg:ty))? $(sections $cfg:ident: $sect:ident)? for $(#[$emeta:meta])* $en:ident, $kind:ident $variants:tt
        $( $(#[$fmeta:meta])* fn $f:ident(&mut self $(, $a:ident: $t:ty)* ) $(-> $r:ty)?; )*
        $( ref { $( $(#[$gmeta:meta])* fn $g:ident(&self $(, $b:ident: $u:ty)* ) $(-> $s:ty)?; )* } )?
        $( provided mut { $( $(#[$hmeta:meta])* fn $h:ident(&mut $hs:ident $(, $c:ident: $v:ty)* ) $(-> $w:ty)? $hb:block )* } )?
        $( provided ref { $( $(#[$kmeta:meta])* fn $k:ident(&$ks:ident $(, $d:ident: $x:ty)* ) $(-> $y:ty)? $kb:block )* } )?
    ) => {
        $(#[$meta])*
        pub trait $tr {
            $( $(#[$fmeta])* fn $f(&mut self $(, $a: $t)*) $(-> $r)?; )*
            $( $( $(#[$gmeta])* fn $g(&self $(, $b: $u)*) $(-> $s)?; )* )?
            $( $( $(#[$hmeta])* fn $h(&mut $hs $(, $c: $v)*) $(-> $w)? $hb )* )?
            $( $( $(#[$kmeta])* fn $k(&$ks $(, $d: $x)*) $(-> $y)? $kb )* )?
        }
        $crate::registry!(@types [$(#[$emeta])*] $en $kind $variants);
        $( $crate::registry!(@make $en $kind $arg $variants); )?
        $crate::registry!(@convert $en $kind $variants);
        $( $crate::registry!(@config $kind $cfg $sect $variants); )?
        impl $tr for $en {
            $( $crate::registry!(@method $en $variants fn $f($($a: $t),*) $(-> $r)?); )*
            $( $( $crate::registry!(@ref_method $en $variants fn $g($($b: $u),*) $(-> $s)?); )* )?
            $( $( $crate::registry!(@method $en $variants fn $h($($c: $v),*) $(-> $w)?); )* )?
            $( $( $crate::registry!(@ref_method $en $variants fn $k($($d: $x),*) $(-> $y)?); )* )?
        }
    };
    // The dispatch is a match and a call: always inlined into the caller, so the
    // hot paths of the links and TCP see through it (1,217 -> 1,214 instructions
    // per event, per run 0.968x: bench/RESULTS.md).
    (@method $en:ident $variants:tt fn $f:ident($($a:ident: $t:ty),*) $(-> $r:ty)?) => {
        #[inline(always)]
        fn $f(&mut self, $($a: $t),*) $(-> $r)? {
            $crate::registry!(@match self, $en, $f, ($($a),*), $variants)
        }
    };
    (@ref_method $en:ident $variants:tt fn $f:ident($($a:ident: $t:ty),*) $(-> $r:ty)?) => {
        #[inline(always)]
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
    (@types [$(#[$emeta:meta])*] $en:ident $kind:ident { $( $name:literal => $var:ident($ty:ty) $([$bx:ident])? ),+ $(,)? }) => {
        /// One algorithm of the family, with its state (enum dispatch).
        $(#[$emeta])*
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
    (@make $en:ident $kind:ident $arg:ty { $( $name:literal => $var:ident($ty:ty) $([$bx:ident])? ),+ $(,)? }) => {
        impl $kind {
            /// A fresh algorithm of this kind.
            pub fn make(self, arg: &$arg) -> $en {
                match self { $( $kind::$var => $en::$var($crate::registry!(@wrap <$ty>::new(arg) $(, $bx)?)), )+ }
            }
        }
    };
    // The family's sections: each algorithm's own (`schema::Configured`), one
    // enum tagged by the kind, behind the family's section trait `$sect`.
    (@config $kind:ident $cfg:ident $sect:ident { $( $name:literal => $var:ident($ty:ty) $([$bx:ident])? ),+ $(,)? }) => {
        /// A scenario's section for one algorithm of the family: its own keys
        /// (`schema::Configured::Section` of its type).
        #[derive(Clone, Debug, PartialEq)]
        pub enum $cfg {
            $( $var(<$ty as $crate::schema::Configured>::Section), )+
        }

        impl $cfg {
            /// The algorithm the section configures.
            pub fn kind(&self) -> $kind {
                match self { $( $cfg::$var(_) => $kind::$var, )+ }
            }
            /// The section's keys, through the family's section trait.
            pub fn get(&self) -> &dyn $sect {
                match self { $( $cfg::$var(s) => s, )+ }
            }
            /// The section of `kind` with every key unset (the model's defaults).
            pub fn default_of(kind: $kind) -> $cfg {
                match kind { $( $kind::$var => $cfg::$var(Default::default()), )+ }
            }
            /// Reads `rest`, a tagged table without its tag, as the section of
            /// `kind`; `what` names the variant in an error about a key that is
            /// not its own (`schema::tagged`).
            pub fn parse<E: serde::de::Error>(kind: $kind, rest: toml::Value, what: &str) -> Result<$cfg, E> {
                Ok(match kind { $( $kind::$var => $cfg::$var($crate::schema::tagged(rest, what)?), )+ })
            }
        }
    };
    // A variant marked `[boxed]` holds its state behind a `Box`.
    (@wrap $x:expr) => { $x };
    (@wrap $x:expr, boxed) => { Box::new($x) };
    (@convert $en:ident $kind:ident { $( $name:literal => $var:ident($ty:ty) $([$bx:ident])? ),+ $(,)? }) => {
        $(
            impl From<$ty> for $en {
                fn from(x: $ty) -> $en {
                    $en::$var($crate::registry!(@wrap x $(, $bx)?))
                }
            }
            impl<'a> TryFrom<&'a $en> for &'a $ty {
                /// The kind the enum held instead.
                type Error = $kind;
                #[allow(unreachable_patterns)]
                fn try_from(e: &'a $en) -> Result<&'a $ty, $kind> {
                    match e {
                        $en::$var(x) => Ok(x),
                        other => Err(other.kind()),
                    }
                }
            }
        )+
    };
}
