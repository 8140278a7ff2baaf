package org.rdmashuffle.verbs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.reflect.Proxy;
import java.net.InetAddress;
import java.util.List;

import org.junit.jupiter.api.Test;

/** The GID queue pairs send from, chosen from a port's table as a host on a real fabric would have it. */
class GidChoiceTest {
    private static final Gid LINK_LOCAL = gid("fe80:0000:0000:0000:5054:00ff:fe99:0101");
    private static final Gid GLOBAL_V6 = gid("2001:0db8:0000:0000:0000:0000:0000:0007");

    private static Gid gid(String text) {
        byte[] raw = new byte[16];
        String[] groups = text.split(":");
        for (int i = 0; i < 8; i++) {
            int v = Integer.parseInt(groups[i], 16);
            raw[2 * i] = (byte) (v >> 8);
            raw[2 * i + 1] = (byte) v;
        }
        return Gid.of(raw);
    }

    private static Gid v4(String address) throws Exception {
        return Gid.ipv4Mapped((java.net.Inet4Address) InetAddress.getByName(address));
    }

    /** A context whose port 1 has these GIDs (by index; null entries are empty) on {@code link}. */
    private static VerbsContext context(LinkLayer link, List<GidEntry> table) {
        VerbsDevice device = (VerbsDevice) Proxy.newProxyInstance(VerbsDevice.class.getClassLoader(),
                new Class<?>[] {VerbsDevice.class}, (p, m, a) -> switch (m.getName()) {
                    case "name" -> "rxe7";
                    default -> throw new UnsupportedOperationException(m.getName());
                });
        return (VerbsContext) Proxy.newProxyInstance(VerbsContext.class.getClassLoader(), new Class<?>[] {VerbsContext.class},
                (p, m, a) -> switch (m.getName()) {
                    case "device" -> device;
                    case "queryGid" -> table.stream().filter(e -> e != null && e.index() == (int) a[1]).findFirst().orElse(null);
                    default -> throw new UnsupportedOperationException(m.getName());
                });
    }

    private static PortAttributes port(LinkLayer link, int gids) {
        return new PortAttributes(1, PortState.ACTIVE, 5, link, Mtu.MTU_4096, Mtu.MTU_4096, gids, 1L << 31, 0, 1, 1);
    }

    private static GidEntry entry(int index, Gid gid, GidType type) {
        return new GidEntry(1, index, gid, type, 3);
    }

    private static final List<GidEntry> TWO_ADDRESSES = List.of(entry(0, LINK_LOCAL, GidType.ROCE_V2),
            entry(1, gidUnchecked("10.0.0.5"), GidType.ROCE_V1), entry(2, gidUnchecked("10.0.0.5"), GidType.ROCE_V2),
            entry(3, gidUnchecked("10.99.1.1"), GidType.ROCE_V2));

    private static Gid gidUnchecked(String address) {
        try {
            return v4(address);
        } catch (Exception e) {
            throw new AssertionError(e);
        }
    }

    @Test
    void theGidOfTheAddressPeersReachUsAtIsChosen() throws Exception {
        GidChoice c = GidChoice.choose(context(LinkLayer.ETHERNET, TWO_ADDRESSES), port(LinkLayer.ETHERNET, 8),
                InetAddress.getByName("10.99.1.1"));
        assertEquals(3, c.index());
        assertEquals(v4("10.99.1.1"), c.gid());
        assertTrue(c.reason().contains("10.99.1.1"), c.reason());
    }

    @Test
    void withoutAnAddress_theFirstRoceV2Ipv4Gid_neverLinkLocalNorRoceV1() throws Exception {
        for (String none : new String[] {null, "127.0.0.1", "0.0.0.0"}) {
            GidChoice c = GidChoice.choose(context(LinkLayer.ETHERNET, TWO_ADDRESSES), port(LinkLayer.ETHERNET, 8),
                    none == null ? null : InetAddress.getByName(none));
            assertEquals(2, c.index(), "address " + none);
        }
        GidChoice other = GidChoice.choose(context(LinkLayer.ETHERNET, TWO_ADDRESSES), port(LinkLayer.ETHERNET, 8),
                InetAddress.getByName("192.168.5.5"));
        assertEquals(2, other.index());
        assertTrue(other.reason().contains("no GID carries 192.168.5.5"), other.reason());
    }

    @Test
    void aGlobalIpv6GidServesWhenThereIsNoIpv4One() {
        GidChoice c = GidChoice.choose(context(LinkLayer.ETHERNET, List.of(entry(0, LINK_LOCAL, GidType.ROCE_V2),
                entry(1, GLOBAL_V6, GidType.ROCE_V2))), port(LinkLayer.ETHERNET, 4), null);
        assertEquals(1, c.index());
    }

    @Test
    void onlyALinkLocalGid_isAnErrorNamingTheDevicePortAndWhatToDo() {
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> GidChoice.choose(
                context(LinkLayer.ETHERNET, List.of(entry(0, LINK_LOCAL, GidType.ROCE_V2))), port(LinkLayer.ETHERNET, 4), null));
        assertTrue(e.getMessage().startsWith("rxe7 port 1 has no RoCE v2 GID"), e.getMessage());
        assertTrue(e.getMessage().contains("IPv4 address") && e.getMessage().contains(LINK_LOCAL.toString()), e.getMessage());
    }

    @Test
    void infinibandNeedsNoGid() {
        assertEquals(-1, GidChoice.choose(context(LinkLayer.INFINIBAND, List.of()), port(LinkLayer.INFINIBAND, 1), null).index());
    }

    @Test
    void aWrongExplicitGidIndexIsRefusedWithTheUsableEntries() {
        VerbsContext ctx = context(LinkLayer.ETHERNET, TWO_ADDRESSES);
        PortAttributes port = port(LinkLayer.ETHERNET, 8);
        assertEquals(3, GidChoice.explicit(ctx, port, 3).index());
        IllegalArgumentException outside = assertThrows(IllegalArgumentException.class, () -> GidChoice.explicit(ctx, port, 9));
        assertTrue(outside.getMessage().contains("gidIndex 9 is outside rxe7 port 1's GID table of 8 entries"),
                outside.getMessage());
        IllegalArgumentException empty = assertThrows(IllegalArgumentException.class, () -> GidChoice.explicit(ctx, port, 5));
        assertTrue(empty.getMessage().contains("gidIndex 5 on rxe7 port 1 is empty")
                && empty.getMessage().contains("3: ::ffff:10.99.1.1"), empty.getMessage());
        IllegalArgumentException local = assertThrows(IllegalArgumentException.class, () -> GidChoice.explicit(ctx, port, 0));
        assertTrue(local.getMessage().contains("link-local"), local.getMessage());
    }
}
