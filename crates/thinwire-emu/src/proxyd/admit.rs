//! Admission: what happens to a packet from a mobile. A connection the proxy
//! carries goes to it; a new one is proxied, passed through unproxied (beyond
//! `max_connections`, `max_connections_per_mobile` or `max_buffer`, while
//! draining, or outside the configured prefixes) or refused with a RST (a
//! destination the proxy must not connect to: loopback, not unicast, its own
//! addresses, in any spelling, IPv4 embedded in IPv6 included).
use super::*;

impl Daemon {
    /// A packet from a mobile: proxied, refused, or passed on.
    pub(super) fn from_mobile(&mut self, mut p: Packet, now: Instant) {
        let L4::Tcp(r) = p.l4 else { return self.pass(p) };
        let key = (p.ip.src(), r.src_port, p.ip.dst(), r.dst_port);
        if self.proxy.tracks((key.0, key.1), (key.2, key.3)) {
            if r.flags.has(TcpFlags::RST) {
                self.n.resets_from_mobile += 1;
            }
            return self.proxy.on_packet(now, Side::Wireless, p);
        }
        let syn = r.flags.has(TcpFlags::SYN) && !r.flags.has(TcpFlags::ACK);
        if let Some(t) = self.bypass.get_mut(&key) {
            *t = now;
            return self.pass(p);
        }
        if !syn {
            // Not a connection we carry (late packets of a finished one, or one
            // that began before the daemon): the proxy answers or passes it.
            return self.proxy.on_packet(now, Side::Wireless, p);
        }
        if !self.prefixes.is_empty() && !self.prefixes.iter().any(|x| x.contains(key.0.into())) {
            return self.pass(p);
        }
        if let Some(why) = self.forbidden(key.2) {
            self.n.refused_destination += 1;
            self.log.event(
                "refused",
                &[("mobile", ip(key.0).into()), ("destination", ip(key.2).into()), ("why", why.into())],
            );
            return self.proxy.refuse(now, &p);
        }
        let limit = if self.draining.is_some() {
            Some("draining")
        } else if self.proxy.live_connections() >= self.cfg.max_connections {
            Some("max_connections")
        } else if self.proxy.mobile_connections(key.0) >= self.cfg.max_connections_per_mobile
            && !self.proxy.evict_stale_half_open(key.0, now)
        {
            Some("max_connections_per_mobile")
        } else if self.proxy.buffered() >= self.cfg.max_buffer.0 {
            Some("max_buffer")
        } else {
            None
        };
        if let Some(l) = limit {
            self.n.passed_limit += 1;
            self.log
                .event("passed", &[("mobile", ip(key.0).into()), ("server", ip(key.2).into()), ("limit", l.into())]);
            self.bypass.insert(key, now);
            return self.pass(p);
        }
        if let Some(r) = &mut self.rec {
            p.meta.flow = r.new_flow(key);
        }
        self.proxy.on_packet(now, Side::Wireless, p);
    }

    pub(super) fn forbidden(&self, dst: IpAddress) -> Option<&'static str> {
        forbidden(IpAddr::from(dst), &self.local)
    }
}

/// The IPv4 address an IPv6 one stands for, if any: IPv4-mapped
/// (`::ffff:a.b.c.d`), IPv4-compatible (`::a.b.c.d`, RFC 4291 §2.5.5.1) and the
/// NAT64 well-known prefix (`64:ff9b::/96`, RFC 6052) all reach an IPv4 host.
fn embedded_v4(a: std::net::Ipv6Addr) -> Option<std::net::Ipv4Addr> {
    let s = a.segments();
    let v4 = || std::net::Ipv4Addr::new((s[6] >> 8) as u8, s[6] as u8, (s[7] >> 8) as u8, s[7] as u8);
    match s {
        [0, 0, 0, 0, 0, 0xffff, _, _] => Some(v4()),
        [0, 0, 0, 0, 0, 0, _, _] if s[6] != 0 => Some(v4()),
        [0x64, 0xff9b, 0, 0, 0, 0, _, _] => Some(v4()),
        _ => None,
    }
}

/// Why the proxy must not connect to `a` for a mobile (None: it may): loopback,
/// not a unicast address, or one of `local` — in any of its spellings.
fn forbidden(a: IpAddr, local: &HashSet<IpAddr>) -> Option<&'static str> {
    let forms = match a {
        IpAddr::V6(v6) => [Some(a), embedded_v4(v6).map(IpAddr::V4)],
        IpAddr::V4(_) => [Some(a), None],
    };
    for a in forms.into_iter().flatten() {
        if a.is_loopback() {
            return Some("loopback");
        }
        if a.is_unspecified() || a.is_multicast() || a == IpAddr::from([255, 255, 255, 255]) {
            return Some("not a unicast address");
        }
        if local.contains(&a) {
            return Some("the proxy's own address");
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_unspecified_and_own_addresses_are_refused_in_every_spelling() {
        let local: HashSet<IpAddr> = ["10.0.0.2".parse().unwrap()].into_iter().collect();
        let refused = |s: &str| forbidden(s.parse().unwrap(), &local);
        for a in ["127.0.0.1", "::1", "::ffff:127.0.0.1", "::127.0.0.1", "64:ff9b::7f00:1"] {
            assert_eq!(refused(a), Some("loopback"), "{a}");
        }
        for a in ["0.0.0.0", "::", "::ffff:0.0.0.0", "224.0.0.1", "::ffff:224.0.0.1", "64:ff9b::e000:1"] {
            assert_eq!(refused(a), Some("not a unicast address"), "{a}");
        }
        for a in ["10.0.0.2", "::ffff:10.0.0.2", "64:ff9b::a00:2"] {
            assert_eq!(refused(a), Some("the proxy's own address"), "{a}");
        }
        for a in ["10.0.0.1", "::ffff:10.0.0.1", "2001:db8::1", "64:ff9b::a00:1"] {
            assert_eq!(refused(a), None, "{a}");
        }
    }
}
