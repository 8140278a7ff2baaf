package org.rdmashuffle.verbs.conformance;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;
import org.rdmashuffle.verbs.DeviceAttributes;
import org.rdmashuffle.verbs.GidEntry;
import org.rdmashuffle.verbs.PortAttributes;
import org.rdmashuffle.verbs.PortState;
import org.rdmashuffle.verbs.VerbsContext;
import org.rdmashuffle.verbs.VerbsException;

/** Device list, device attributes, port attributes and the GID table. */
class DeviceQueryTest {

    @Test
    void devicesAreListedAndOpen() {
        VerbsTestSupport.Target t = VerbsTestSupport.target();
        assertTrue(VerbsTestSupport.provider().devices().contains(t.device()));
        assertFalse(t.device().name().isEmpty());
        try (VerbsContext ctx = t.device().open()) {
            assertEquals(t.device(), ctx.device());
        }
    }

    @Test
    void deviceAttributesAreSane() {
        VerbsTestSupport.Target t = VerbsTestSupport.target();
        try (VerbsContext ctx = t.device().open()) {
            DeviceAttributes a = ctx.queryDevice();
            assertTrue(a.physicalPortCount() >= 1, a::toString);
            assertTrue(a.maxQp() > 0 && a.maxQpWr() > 0 && a.maxCq() > 0 && a.maxCqe() > 0, a::toString);
            assertTrue(a.maxSge() >= 1 && a.maxMr() > 0 && a.maxPd() > 0, a::toString);
            assertTrue(a.maxMrSize() > 0 || a.maxMrSize() == -1L, a::toString);
            assertNotNull(a.atomicCapability());
        }
    }

    @Test
    void activePortHasMtuAndGid() {
        VerbsTestSupport.Target t = VerbsTestSupport.target();
        try (VerbsContext ctx = t.device().open()) {
            PortAttributes port = ctx.queryPort(t.port());
            assertEquals(PortState.ACTIVE, port.state());
            assertEquals(t.port(), port.portNumber());
            assertTrue(port.activeMtu().bytes() <= port.maxMtu().bytes());
            assertTrue(port.gidTableLength() > 0);
            if (t.gidIndex() >= 0) {
                GidEntry gid = ctx.queryGid(t.port(), t.gidIndex());
                assertNotNull(gid, "GID at index " + t.gidIndex());
                assertFalse(gid.gid().isZero());
                assertEquals(t.gidIndex(), gid.index());
            }
        }
    }

    @Test
    void queryingAPortThatDoesNotExistNamesTheCall() {
        VerbsTestSupport.Target t = VerbsTestSupport.target();
        try (VerbsContext ctx = t.device().open()) {
            int missing = ctx.queryDevice().physicalPortCount() + 1;
            VerbsException e = assertThrows(VerbsException.class, () -> ctx.queryPort(missing));
            assertTrue(e.getMessage().contains("ibv_query_port"), e.getMessage());
            assertTrue(e.errno() != 0, e.getMessage());
        }
    }
}
