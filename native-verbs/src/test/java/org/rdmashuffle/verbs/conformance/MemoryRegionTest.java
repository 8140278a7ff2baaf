package org.rdmashuffle.verbs.conformance;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.rdmashuffle.verbs.Access;
import org.rdmashuffle.verbs.MemoryRegion;
import org.rdmashuffle.verbs.SendFlags;
import org.rdmashuffle.verbs.SendWorkRequests;
import org.rdmashuffle.verbs.VerbsException;
import org.rdmashuffle.verbs.WorkCompletionStatus;

/** Registration of native memory, owned memory and file mappings; bounds; on-demand paging. */
class MemoryRegionTest {

    @Test
    void registeredMemoryHasKeysAndBounds() {
        try (Loopback l = Loopback.open(); Arena arena = Arena.ofConfined()) {
            MemorySegment mem = arena.allocate(8192, 4096);
            try (MemoryRegion mr = l.pd.register(mem, Access.LOCAL_WRITE | Access.REMOTE_READ)) {
                assertEquals(mem.address(), mr.address());
                assertEquals(8192, mr.length());
                assertEquals(Access.LOCAL_WRITE | Access.REMOTE_READ, mr.access());
                mr.checkRange(0, 8192);
                mr.checkRange(8191, 1);
                IndexOutOfBoundsException e = assertThrows(IndexOutOfBoundsException.class, () -> mr.checkRange(8000, 193));
                assertTrue(e.getMessage().contains("outside memory region of 8192 bytes"), e.getMessage());
                assertThrows(IndexOutOfBoundsException.class, () -> mr.checkRange(-1, 1));
            }
        }
    }

    @Test
    void heapMemoryIsRefused() {
        try (Loopback l = Loopback.open()) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> l.pd.register(MemorySegment.ofArray(new byte[64]), Access.LOCAL_WRITE));
            assertTrue(e.getMessage().contains("native"), e.getMessage());
        }
    }

    @Test
    void twoRegionsHaveDistinctKeysAndCloseTwiceIsHarmless() {
        try (Loopback l = Loopback.open()) {
            MemoryRegion one = l.pd.allocateAndRegister(4096, Access.LOCAL_WRITE | Access.REMOTE_READ);
            MemoryRegion two = l.pd.allocateAndRegister(4096, Access.LOCAL_WRITE | Access.REMOTE_READ);
            assertNotEquals(one.rkey(), two.rkey());
            one.close();
            one.close();
            two.close();
        }
    }

    @Test
    void onDemandPagingIsUsedOnlyWhereTheDeviceHasIt() {
        try (Loopback l = Loopback.open()) {
            int access = Access.LOCAL_WRITE | Access.REMOTE_READ | Access.ON_DEMAND;
            if (l.context.queryDevice().supportsOnDemandPaging()) {
                try (MemoryRegion mr = l.pd.allocateAndRegister(1 << 20, access)) {
                    assertTrue((mr.access() & Access.ON_DEMAND) != 0);
                }
            } else {
                VerbsException e = assertThrows(VerbsException.class, () -> l.pd.allocateAndRegister(1 << 20, access));
                assertTrue(e.getMessage().contains("on-demand paging"), e.getMessage());
            }
        }
    }

    /**
     * A file mapping registered past the 4 GiB mark of a sparse file, then read remotely: offsets
     * and lengths are longs end to end (no 2 GiB ByteBuffer limit).
     */
    @Test
    void fileMappingBeyondFourGibIsReadRemotely(@TempDir Path dir) throws IOException {
        long offset = (4L << 30) + 8192;
        byte[] payload = new byte[64 << 10];
        for (int i = 0; i < payload.length; i++) {
            payload[i] = (byte) (i * 31 + 7);
        }
        Path file = dir.resolve("map-output.data");
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE,
                StandardOpenOption.SPARSE)) {
            ch.write(ByteBuffer.wrap(payload), offset);
        }
        try (Loopback l = Loopback.open();
             // READ and WRITE: kernels before 6.2 can only register a writable mapping (see registerFile).
             FileChannel ch = FileChannel.open(file, StandardOpenOption.READ, StandardOpenOption.WRITE);
             MemoryRegion remote = l.pd.registerFile(ch, offset, payload.length, Access.REMOTE_READ);
             MemoryRegion local = l.pd.allocateAndRegister(payload.length, Access.LOCAL_WRITE);
             SendWorkRequests chain = SendWorkRequests.allocate(1, 1)) {
            assertEquals(payload.length, remote.length());
            chain.get(0).rdmaRead(42, SendFlags.SIGNALED, local, 0, payload.length, remote.address(), remote.rkey());
            l.a.postSend(chain, 1);
            var c = VerbsTestSupport.awaitCompletions(l.cqA, 1).getFirst();
            assertEquals(WorkCompletionStatus.SUCCESS, c.status());
            assertEquals(42, c.wrId());
            assertArrayEquals(payload, local.segment().toArray(ValueLayout.JAVA_BYTE));
        }
        assertTrue(Files.size(file) > 4L << 30);
    }
}
