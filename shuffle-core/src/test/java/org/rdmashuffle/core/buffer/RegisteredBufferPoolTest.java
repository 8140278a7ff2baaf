package org.rdmashuffle.core.buffer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;

import org.junit.jupiter.api.Test;
import org.rdmashuffle.verbs.ProtectionDomain;
import org.rdmashuffle.verbs.VerbsContext;
import org.rdmashuffle.verbs.software.SoftwareProvider;

/** Fetch buffers cut from registered chunks: a chunk serves whichever size needs it once it is idle. */
class RegisteredBufferPoolTest {

    @Test
    void aChunkCutForOneSizeServesAnotherOnceNoneOfItsBuffersIsOut() {
        try (SoftwareProvider sp = new SoftwareProvider(SoftwareProvider.Config.loopback());
             VerbsContext ctx = sp.devices().getFirst().open();
             ProtectionDomain pd = ctx.allocateProtectionDomain();
             RegisteredBufferPool pool = new RegisteredBufferPool(pd, 64 << 10, 64 << 10, null)) {
            RegisteredBuffer small = pool.allocate(16 << 10); // the only chunk is cut into 16 KiB buffers
            assertNotNull(small);
            assertNull(pool.allocate(32 << 10), "a 32 KiB buffer while the chunk's 16 KiB one is out");
            small.release();
            RegisteredBuffer large = pool.allocate(32 << 10);
            assertNotNull(large, "the idle chunk was not cut again: a 32 KiB block would wait for ever");
            assertEquals(64 << 10, pool.registeredBytes(), "cut again, not registered again");
            RegisteredBuffer second = pool.allocate(32 << 10);
            assertNotNull(second);
            assertNull(pool.allocate(16 << 10), "both halves are out");
            large.release();
            second.release();
            assertNotNull(pool.allocate(4 << 10));
            assertEquals(1, pool.outstanding());
        }
    }
}
