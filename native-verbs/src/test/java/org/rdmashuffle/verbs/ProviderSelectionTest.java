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

    /** A bad setting is the reason nothing is chosen, naming its key and value; no provider is made of it. */
    @Test
    void aBadSoftwareSettingIsTheReasonNoProviderIsChosen_namingItsKey() {
        Verbs.Selection port = Verbs.select("software", new ProviderSettings(java.util.Map.of(SoftwareProvider.SETTING_PORT, "70000")));
        assertNull(port.provider());
        assertEquals("software.port=70000 is not a port", port.reason());
        Verbs.Selection text = Verbs.select("auto", new ProviderSettings(java.util.Map.of(SoftwareProvider.SETTING_PORT, "x1")));
        assertNull(text.provider());
        assertEquals("software.port=x1 is not a port", text.reason());
        // A malformed IPv6 literal: refused as it is parsed, without a name lookup.
        Verbs.Selection address = Verbs.select("software",
                new ProviderSettings(java.util.Map.of(SoftwareProvider.SETTING_BIND_ADDRESS, "[::1")));
        assertNull(address.provider());
        assertTrue(address.reason().startsWith("software.bindAddress=[::1 is not an address"), address.reason());
    }

    /** Engines configured alike share one software device (one listener); a different setting gets its own. */
    @Test
    void engineSettingsConfigureTheSoftwareProvider_alikeOnesShareIt() {
        ProviderSettings loopback = new ProviderSettings(java.util.Map.of(SoftwareProvider.SETTING_BIND_ADDRESS, "127.0.0.1"));
        assertSame(SoftwareProvider.instance(), Verbs.select("software", loopback).provider());
        ProviderSettings sendfile = new ProviderSettings(java.util.Map.of(SoftwareProvider.SETTING_SENDFILE, "true"));
        VerbsProvider other = Verbs.select("software", sendfile).provider();
        assertTrue(other != SoftwareProvider.instance(), "a different setting, a different device");
        assertSame(other, Verbs.select("software", sendfile).provider());
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
