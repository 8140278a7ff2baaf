package org.rdmashuffle.verbs.ibverbs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.MemorySegment;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.rdmashuffle.verbs.Availability;
import org.rdmashuffle.verbs.VerbsUnavailableException;
import org.rdmashuffle.verbs.WorkCompletionStatus;
import org.rdmashuffle.verbs.conformance.VerbsTestSupport;

/** Provider-specific checks: availability is an answer, never a crash; status texts match libibverbs'. */
class IbverbsProviderTest {

    @Test
    void availabilityIsAnAnswerWithACause() {
        IbverbsProvider p = IbverbsProvider.instance();
        Availability a = p.availability();
        assertNotNull(a.cause(), "available or not, the provider says what it found");
        assertFalse(a.cause().isBlank());
        assertEquals(a.available(), p.isAvailable());
        if (a.available()) {
            assertNull(p.unavailabilityCause());
            assertFalse(p.devices().isEmpty());
        } else {
            assertEquals(a.cause(), p.unavailabilityCause());
            VerbsUnavailableException e = assertThrows(VerbsUnavailableException.class, () -> a.ensureAvailable("ibverbs"));
            assertTrue(e.getMessage().contains(a.cause()));
        }
        if (Boolean.getBoolean(VerbsTestSupport.REQUIRE_DEVICE_PROPERTY)) {
            assertTrue(a.available(), "a device is required here, but: " + a.cause());
        }
    }

    @Test
    void memlockLimitIsReadable() {
        long limit = IbverbsProvider.instance().memlockLimitBytes();
        assertTrue(limit == -1 || limit >= 0, "limit " + limit);
        assertFalse(IbverbsProvider.bytes(limit).isBlank());
    }

    @Test
    void statusTextsMatchLibibverbs() {
        Assumptions.assumeTrue(Libibverbs.loaded(), () -> "no libibverbs: " + Libibverbs.LOAD_FAILURE);
        for (WorkCompletionStatus s : WorkCompletionStatus.values()) {
            MemorySegment text = (MemorySegment) Libibverbs.WC_STATUS_STR.plain(s.code());
            assertEquals(text.reinterpret(128).getString(0), s.description(), s.name());
        }
    }
}
