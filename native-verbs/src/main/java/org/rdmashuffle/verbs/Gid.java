package org.rdmashuffle.verbs;

import java.net.InetAddress;
import java.net.UnknownHostException;
import java.util.Arrays;
import java.util.HexFormat;

/** A 128-bit global identifier: an IB GID, or for RoCE an IPv6 (or IPv4-mapped) address. */
public final class Gid {
    public static final int BYTES = 16;

    private final byte[] raw;

    private Gid(byte[] raw) {
        this.raw = raw;
    }

    public static Gid of(byte[] raw) {
        if (raw.length != BYTES) {
            throw new IllegalArgumentException("a GID has 16 bytes, not " + raw.length);
        }
        return new Gid(raw.clone());
    }

    /** {@code ::ffff:a.b.c.d}: the IPv4-mapped GID of an IPv4 address. */
    public static Gid ipv4Mapped(java.net.Inet4Address address) {
        byte[] raw = new byte[BYTES];
        raw[10] = (byte) 0xff;
        raw[11] = (byte) 0xff;
        System.arraycopy(address.getAddress(), 0, raw, 12, 4);
        return new Gid(raw);
    }

    /** The IPv4 address an IPv4-mapped GID carries; null for any other GID. */
    public InetAddress ipv4Address() {
        if (!isIpv4Mapped()) {
            return null;
        }
        try {
            return InetAddress.getByAddress(Arrays.copyOfRange(raw, 12, 16));
        } catch (UnknownHostException e) {
            throw new AssertionError(e);
        }
    }

    public byte[] bytes() {
        return raw.clone();
    }

    public boolean isZero() {
        for (byte b : raw) {
            if (b != 0) {
                return false;
            }
        }
        return true;
    }

    /** True for {@code ::ffff:a.b.c.d}, the form RoCE v2 uses for IPv4 addresses. */
    public boolean isIpv4Mapped() {
        for (int i = 0; i < 10; i++) {
            if (raw[i] != 0) {
                return false;
            }
        }
        return raw[10] == (byte) 0xff && raw[11] == (byte) 0xff;
    }

    @Override
    public String toString() {
        if (isIpv4Mapped()) {
            return "::ffff:" + ipv4Address().getHostAddress();
        }
        String hex = HexFormat.of().formatHex(raw);
        StringBuilder sb = new StringBuilder(39);
        for (int i = 0; i < 32; i += 4) {
            if (i > 0) sb.append(':');
            sb.append(hex, i, i + 4);
        }
        return sb.toString();
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof Gid g && Arrays.equals(raw, g.raw);
    }

    @Override
    public int hashCode() {
        return Arrays.hashCode(raw);
    }
}
