package org.rdmashuffle.core.buffer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.ArrayDeque;
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

    /**
     * A slab failed to register on the grower while a read waited; then room came free and the read was
     * served. A pool that kept the failure threw it at the next allocation that needed a slab, long after
     * registration worked again, and failed a fetch that had nothing to do with it.
     */
    @Test
    void aFailedRegistrationIsNotThrownAtALaterAllocation() {
        try (SoftwareProvider sp = new SoftwareProvider(SoftwareProvider.Config.loopback());
             VerbsContext ctx = sp.devices().getFirst().open();
             ProtectionDomain pd = ctx.allocateProtectionDomain()) {
            AtomicBoolean fail = new AtomicBoolean(false);
            ArrayDeque<Runnable> grower = new ArrayDeque<>(); // run by hand: the test says when a slab registers
            try (RegisteredBufferPool pool = new RegisteredBufferPool(bytes -> {
                if (fail.get()) {
                    throw new IllegalStateException("ibv_reg_mr failed: ENOMEM");
                }
                return pd.allocateAndRegister(bytes, Access.LOCAL_WRITE);
            }, 128 << 10, 64 << 10, null, grower::add)) {
                pool.grow();
                RegisteredBuffer whole = pool.allocate(64 << 10);
                assertNotNull(whole, "the first slab, whole");
                fail.set(true);
                assertNull(pool.allocate(4 << 10), "no room: a second slab is registering");
                grower.remove().run(); // fails
                assertThrows(IllegalStateException.class, () -> pool.allocate(4 << 10),
                        "the read that waited, still without room, learns that the slab failed");

                assertNull(pool.allocate(4 << 10), "asked again: registering again");
                grower.remove().run(); // fails too
                whole.release(); // room again: the read that waited is served from the first slab
                RegisteredBuffer served = pool.allocate(4 << 10);
                assertNotNull(served);
                served.release();

                fail.set(false);
                whole = pool.allocate(64 << 10);
                assertNotNull(whole);
                assertNull(pool.allocate(4 << 10), "no room: registering a slab, not throwing the old failure");
                assertEquals(1, grower.size());
                grower.remove().run();
                RegisteredBuffer small = pool.allocate(4 << 10);
                assertNotNull(small, "from the second slab");
                assertEquals(128 << 10, pool.registeredBytes());
                small.release();
                whole.release();
                assertEquals(0, pool.outstanding());
            }
        }
    }
}
