package org.rdmashuffle.core.buffer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.concurrent.atomic.AtomicBoolean;

import org.junit.jupiter.api.Test;
import org.rdmashuffle.verbs.Access;
import org.rdmashuffle.verbs.ProtectionDomain;
import org.rdmashuffle.verbs.VerbsContext;
import org.rdmashuffle.verbs.software.SoftwareProvider;

/** Fetch buffers cut from registered slabs by buddies: any free run serves any size, nothing is registered per fetch. */
class RegisteredBufferPoolTest {

    /**
     * The pool of fixed size classes this replaced cut each chunk for one size and re-cut it only when
     * none of its buffers was out: with one small buffer held in each chunk, a size with no chunk of its
     * own waited for ever.
     */
    @Test
    void aSizeClassWithNoFreeChunkDoesNotHang() {
        try (SoftwareProvider sp = new SoftwareProvider(SoftwareProvider.Config.loopback());
             VerbsContext ctx = sp.devices().getFirst().open();
             ProtectionDomain pd = ctx.allocateProtectionDomain();
             RegisteredBufferPool pool = new RegisteredBufferPool(bytes -> pd.allocateAndRegister(bytes, Access.LOCAL_WRITE),
                     128 << 10, 64 << 10, null)) {
            RegisteredBuffer small = pool.allocate(4 << 10); // first slab
            RegisteredBuffer whole = pool.allocate(64 << 10); // second slab, whole: the limit is reached
            assertNotNull(small);
            assertNotNull(whole);
            RegisteredBuffer other = pool.allocate(32 << 10);
            assertNotNull(other, "a 32 KiB buffer while the first slab has 60 KiB free");
            assertEquals(128 << 10, pool.registeredBytes(), "cut from free space, not registered again");
            assertNotNull(pool.allocate(16 << 10));
            assertNotNull(pool.allocate(8 << 10));
            assertNull(pool.allocate(8 << 10), "every unit of both slabs is out now but one 4 KiB");
            assertNotNull(pool.allocate(4 << 10));
            whole.release();
            assertNotNull(pool.allocate(64 << 10), "a released slab-sized buffer serves again");
            assertEquals(6, pool.outstanding());
            assertThrows(IllegalArgumentException.class, () -> pool.allocate((64 << 10) + 1),
                    "nothing larger than a slab: larger blocks are read in pieces");
        }
    }

    @Test
    void aFailedRegistrationThrowsAndLeavesThePoolAsItWas() {
        try (SoftwareProvider sp = new SoftwareProvider(SoftwareProvider.Config.loopback());
             VerbsContext ctx = sp.devices().getFirst().open();
             ProtectionDomain pd = ctx.allocateProtectionDomain()) {
            AtomicBoolean fail = new AtomicBoolean(true);
            IllegalStateException enomem = new IllegalStateException("ibv_reg_mr failed: ENOMEM");
            try (RegisteredBufferPool pool = new RegisteredBufferPool(bytes -> {
                if (fail.get()) {
                    throw enomem;
                }
                return pd.allocateAndRegister(bytes, Access.LOCAL_WRITE);
            }, 128 << 10, 64 << 10, null)) {
                assertSame(enomem, assertThrows(IllegalStateException.class, () -> pool.allocate(4 << 10)));
                assertEquals(0, pool.registeredBytes());
                assertEquals(0, pool.outstanding());
                fail.set(false);
                RegisteredBuffer b = pool.allocate(4 << 10);
                assertNotNull(b);
                b.release();
                assertEquals(0, pool.outstanding());
                assertEquals(0, pool.bytesOut());
            }
        }
    }
}
