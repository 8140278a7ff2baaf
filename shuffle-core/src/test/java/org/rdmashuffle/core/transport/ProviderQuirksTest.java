package org.rdmashuffle.core.transport;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;

/** The rdma-core release, read from the name of the libibverbs file a process maps, as installed. */
class ProviderQuirksTest {
    @Test
    void theReleaseIsTheThirdNumber_whateverFollowsIt() {
        assertEquals(65, ProviderQuirks.releaseOf("libibverbs.so.1.18.65.0")); // forky's, as ldconfig links it
        assertEquals(44, ProviderQuirks.releaseOf("libibverbs.so.1.14.44.0")); // bookworm's
        assertEquals(56, ProviderQuirks.releaseOf("libibverbs.so.1.14.56.1"));
        assertEquals(64, ProviderQuirks.releaseOf("libibverbs.so.1.15.64"));
    }

    @Test
    void aNameThatIsNotLibibverbsOrHasNoRelease_isUnknown() {
        assertEquals(-1, ProviderQuirks.releaseOf("libibverbs.so.1"));
        assertEquals(-1, ProviderQuirks.releaseOf("libibverbs.so.1.14"));
        assertEquals(-1, ProviderQuirks.releaseOf("librdmacm.so.1.3.44.0"));
    }
}
