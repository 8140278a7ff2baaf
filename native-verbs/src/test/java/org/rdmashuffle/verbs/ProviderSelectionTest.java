package org.rdmashuffle.verbs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;
import org.rdmashuffle.verbs.ibverbs.IbverbsProvider;
import org.rdmashuffle.verbs.software.SoftwareProvider;

/** auto prefers a usable device and otherwise falls back to software; explicit choices are honoured or refused with the cause. */
class ProviderSelectionTest {

    @Test
    void autoTakesIbverbsWhenUsableElseSoftwareAndSaysWhy() {
        Verbs.Selection s = Verbs.select("auto");
        IbverbsProvider ibv = IbverbsProvider.instance();
        if (ibv.isAvailable()) {
            assertSame(ibv, s.provider());
        } else {
            assertSame(SoftwareProvider.instance(), s.provider());
            assertTrue(s.reason().contains("not ibverbs: " + ibv.unavailabilityCause()), s.reason());
        }
        assertTrue(s.reason().startsWith("auto: "), s.reason());
    }

    @Test
    void softwareIsAlwaysAvailable() {
        Verbs.Selection s = Verbs.select("software");
        assertSame(SoftwareProvider.instance(), s.provider());
        assertTrue(s.reason().contains("over TCP"), s.reason());
    }

    @Test
    void ibverbsFailsWithTheCauseWhenNoDeviceIsUsable() {
        Verbs.Selection s = Verbs.select(" IBVERBS ");
        IbverbsProvider ibv = IbverbsProvider.instance();
        if (ibv.isAvailable()) {
            assertSame(ibv, s.provider());
        } else {
            assertNull(s.provider());
            VerbsUnavailableException e = assertThrows(VerbsUnavailableException.class, s::orElseThrow);
            assertTrue(e.getMessage().contains(ibv.unavailabilityCause()), e.getMessage());
        }
    }

    @Test
    void unknownProviderIsNamedWithTheKnownOnes() {
        Verbs.Selection s = Verbs.select("infiniband-over-carrier-pigeon");
        assertNull(s.provider());
        assertEquals("unknown provider 'infiniband-over-carrier-pigeon'; known: auto, ibverbs, software", s.reason());
    }
}
