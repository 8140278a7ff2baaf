package org.rdmashuffle.verbs;

import java.net.Inet4Address;
import java.net.InetAddress;
import java.util.ArrayList;
import java.util.List;

/**
 * Which entry of a port's GID table queue pairs use to reach peers on other hosts, and why. On RoCE
 * the GID is the source IP address of every packet, so it must be one the peers can route to: the
 * RoCE v2 GID that carries the address peers reach this host at (the engine's bind address) if the
 * port has it, else the first RoCE v2 IPv4 GID, else the first RoCE v2 global IPv6 GID. Never a
 * link-local GID ({@code fe80::}): it routes on no other link. On InfiniBand the LID addresses peers
 * and there is no choice to make ({@link #index} -1).
 */
public record GidChoice(int index, Gid gid, String reason) {

    /** The GID for peers that reach this host at {@code address} (null, loopback or wildcard: no preference). */
    public static GidChoice choose(VerbsContext ctx, PortAttributes port, InetAddress address) {
        String where = ctx.device().name() + " port " + port.portNumber();
        if (port.linkLayer() == LinkLayer.INFINIBAND) {
            return new GidChoice(-1, null, where + " is InfiniBand: peers are addressed by LID");
        }
        List<GidEntry> entries = entries(ctx, port);
        Gid wanted = address instanceof Inet4Address v4 && specific(address) ? Gid.ipv4Mapped(v4) : null;
        if (wanted != null) {
            for (GidEntry e : entries) {
                if (e.type() == GidType.ROCE_V2 && e.gid().equals(wanted)) {
                    return new GidChoice(e.index(), e.gid(), "the RoCE v2 GID of " + address.getHostAddress()
                            + ", the address peers reach this host at");
                }
            }
        }
        String missing = wanted == null ? "" : " (no GID carries " + address.getHostAddress() + ")";
        for (GidEntry e : entries) {
            if (e.type() == GidType.ROCE_V2 && e.gid().isIpv4Mapped()) {
                return new GidChoice(e.index(), e.gid(), "the first RoCE v2 IPv4 GID" + missing);
            }
        }
        for (GidEntry e : entries) {
            if (e.type() == GidType.ROCE_V2 && !linkLocal(e.gid())) {
                return new GidChoice(e.index(), e.gid(), "the first RoCE v2 global IPv6 GID: the port has no IPv4 one" + missing);
            }
        }
        throw new IllegalStateException(where + " has no RoCE v2 GID a peer on another host can route to "
                + describe(entries) + ": give its network interface an IPv4 address (rxe: `rdma link add rxe0 type rxe "
                + "netdev <interface>` on an interface that has one), or set gidIndex");
    }

    /**
     * The GID at {@code index}, as an operator set it: refused, naming the port and the usable
     * entries, if the table has nothing there or it is link-local.
     */
    public static GidChoice explicit(VerbsContext ctx, PortAttributes port, int index) {
        String where = ctx.device().name() + " port " + port.portNumber();
        List<GidEntry> entries = entries(ctx, port);
        if (index < 0 || index >= port.gidTableLength()) {
            throw new IllegalArgumentException("gidIndex " + index + " is outside " + where + "'s GID table of "
                    + port.gidTableLength() + " entries " + describe(entries));
        }
        for (GidEntry e : entries) {
            if (e.index() == index) {
                if (port.linkLayer() != LinkLayer.INFINIBAND && linkLocal(e.gid())) {
                    throw new IllegalArgumentException("gidIndex " + index + " on " + where + " is the link-local " + e.gid()
                            + ": peers on other hosts cannot route to it; use an IPv4 one " + describe(entries));
                }
                return new GidChoice(index, e.gid(), "set by gidIndex");
            }
        }
        throw new IllegalArgumentException("gidIndex " + index + " on " + where + " is empty " + describe(entries));
    }

    /** The name of the first device with a port whose GID table carries {@code address}; null if none does. */
    public static String deviceCarrying(VerbsProvider provider, InetAddress address) {
        if (!(address instanceof Inet4Address v4) || !specific(address)) {
            return null;
        }
        Gid wanted = Gid.ipv4Mapped(v4);
        for (VerbsDevice d : provider.devices()) {
            try (VerbsContext ctx = d.open()) {
                int ports = ctx.queryDevice().physicalPortCount();
                for (int p = 1; p <= ports; p++) {
                    for (GidEntry e : entries(ctx, ctx.queryPort(p))) {
                        if (e.gid().equals(wanted)) {
                            return d.name();
                        }
                    }
                }
            } catch (VerbsException e) {
                // a device we cannot open or query carries nothing we can use
            }
        }
        return null;
    }

    private static boolean specific(InetAddress a) {
        return !a.isAnyLocalAddress() && !a.isLoopbackAddress();
    }

    static boolean linkLocal(Gid gid) {
        byte[] b = gid.bytes();
        return (b[0] & 0xff) == 0xfe && (b[1] & 0xc0) == 0x80;
    }

    private static List<GidEntry> entries(VerbsContext ctx, PortAttributes port) {
        List<GidEntry> out = new ArrayList<>();
        for (int i = 0; i < port.gidTableLength(); i++) {
            GidEntry e;
            try {
                e = ctx.queryGid(port.portNumber(), i);
            } catch (VerbsException unreadable) {
                continue;
            }
            if (e != null && !e.gid().isZero()) {
                out.add(e);
            }
        }
        return out;
    }

    private static String describe(List<GidEntry> entries) {
        if (entries.isEmpty()) {
            return "(the table is empty)";
        }
        List<String> shown = new ArrayList<>();
        for (GidEntry e : entries) {
            shown.add(e.index() + ": " + e.gid() + " " + e.type());
        }
        return "(entries " + String.join(", ", shown) + ")";
    }
}
