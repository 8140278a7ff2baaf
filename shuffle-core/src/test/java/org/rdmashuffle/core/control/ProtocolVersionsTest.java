package org.rdmashuffle.core.control;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** How a HELLO's versions are read, and which one a server chooses. */
class ProtocolVersionsTest {
    /** A server or client speaking the previous release's version and the next (what 0.2.0 speaks). */
    private static final ProtocolVersions THREE_TO_FOUR = new ProtocolVersions(3, 4);

    @Test
    void thisReleaseSpeaksThePreviousReleasesVersionAndItsOwn() {
        assertEquals(ProtocolVersions.ALONE, ProtocolVersions.SPOKEN.lowest(), "the previous release's version");
        assertEquals(ProtocolVersions.HELD_ANSWERS, ProtocolVersions.SPOKEN.highest(), "this release's own, with held answers");
    }

    @Test
    void anOfferCarriesTheHighestVersionInTheTypeByte_andTheLowestBeforeTheHello() {
        byte[] body = {9, 8, 7};
        byte[] payload = THREE_TO_FOUR.helloPayload(false, body);
        ProtocolVersions.Offer offer = ProtocolVersions.Offer.read(THREE_TO_FOUR.helloType(false), payload);
        assertEquals(new ProtocolVersions.Offer(THREE_TO_FOUR.lowest(), THREE_TO_FOUR.highest(), false), offer);
        assertArrayEquals(body, offer.body(payload));
    }

    @Test
    void versionThreeOrBelow_isOneVersionAlone_andTheHelloAsItIs() {
        byte[] body = {0, 5, 1, 2};
        for (int v = 0; v <= ProtocolVersions.ALONE; v++) {
            ProtocolVersions.Offer offer = ProtocolVersions.Offer.read((byte) v, body);
            assertEquals(new ProtocolVersions.Offer(v, v, true), offer);
            assertArrayEquals(body, offer.body(body));
        }
        assertArrayEquals(body, THREE_TO_FOUR.helloPayload(true, body));
        assertEquals(ProtocolVersions.ALONE, THREE_TO_FOUR.helloType(true));
    }

    @Test
    void theServerChoosesTheHighestVersionBothSpeak() {
        assertEquals(4, THREE_TO_FOUR.choose(new ProtocolVersions.Offer(3, 4, false)), "this release with itself");
        assertEquals(3, THREE_TO_FOUR.choose(new ProtocolVersions.Offer(3, 3, true)), "the previous release's client");
        assertEquals(4, THREE_TO_FOUR.choose(new ProtocolVersions.Offer(4, 5, false)), "the next release's client");
        assertEquals(4, THREE_TO_FOUR.choose(new ProtocolVersions.Offer(0, 255, false)), "never above our own");
        assertEquals(-1, THREE_TO_FOUR.choose(new ProtocolVersions.Offer(5, 6, false)), "too new");
        assertEquals(-1, THREE_TO_FOUR.choose(new ProtocolVersions.Offer(2, 2, true)), "too old");
        assertEquals(-1, new ProtocolVersions(5, 6).choose(new ProtocolVersions.Offer(3, 4, false)));
    }

    @Test
    void aRefusalNamesBothSidesVersions_andBeginsAsEveryReleasesRefusalDoes() {
        String tooNew = THREE_TO_FOUR.refusal(new ProtocolVersions.Offer(5, 6, false));
        assertTrue(tooNew.startsWith(ProtocolVersions.REFUSAL) && tooNew.contains("versions 5 to 6 offered")
                && tooNew.contains("this side speaks versions 3 to 4") && tooNew.contains("docs/compatibility.md"), tooNew);
        String tooOld = THREE_TO_FOUR.refusal(new ProtocolVersions.Offer(2, 2, true));
        assertTrue(tooOld.startsWith(ProtocolVersions.REFUSAL + " 2 is not spoken here")
                && tooOld.contains("this side speaks versions 3 to 4"), tooOld);
    }

    @Test
    void aMalformedOffer_saysWhatIsWrong() {
        IllegalArgumentException empty = assertThrows(IllegalArgumentException.class,
                () -> ProtocolVersions.Offer.read((byte) 4, new byte[0]));
        assertTrue(empty.getMessage().contains("highest version 4 and no lowest"), empty.getMessage());
        IllegalArgumentException inverted = assertThrows(IllegalArgumentException.class,
                () -> ProtocolVersions.Offer.read((byte) 4, new byte[] {9}));
        assertTrue(inverted.getMessage().contains("lowest version 9 above the highest, 4"), inverted.getMessage());
    }

    @Test
    void versionsAreReadUnsigned() {
        ProtocolVersions.Offer offer = ProtocolVersions.Offer.read((byte) 200, new byte[] {(byte) 150});
        assertEquals(new ProtocolVersions.Offer(150, 200, false), offer);
        assertEquals(-1, THREE_TO_FOUR.choose(offer));
    }

    @Test
    void aRangeAnOfferCannotCarry_isRefused() {
        assertThrows(IllegalArgumentException.class, () -> new ProtocolVersions(2, 3), "3 alone reads as the old encoding");
        assertThrows(IllegalArgumentException.class, () -> new ProtocolVersions(5, 4));
        assertThrows(IllegalArgumentException.class, () -> new ProtocolVersions(4, 256));
    }
}
