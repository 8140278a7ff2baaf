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
     * ibv_advise_mr(PREFETCH) of an on-demand region: taken or declined (false: the provider has no
     * advise_mr), never an error, and the region reads the same after; a pinned region or a range
     * outside the region is refused before anything reaches the device.
     */
    @Test
    void anOnDemandRegionTakesPrefetchAdvice_aPinnedOneOrAnOutOfRangeOneIsRefused() {
        try (Loopback l = Loopback.open()) {
            try (MemoryRegion pinned = l.pd.allocateAndRegister(1 << 16, Access.LOCAL_WRITE | Access.REMOTE_READ)) {
                IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> l.pd.prefetch(pinned, 0, 4096));
                assertTrue(e.getMessage().contains("on-demand"), e.getMessage());
            }
            if (!l.context.queryDevice().supportsOnDemandPaging()) {
                return;
            }
            int access = Access.LOCAL_WRITE | Access.REMOTE_READ | Access.ON_DEMAND;
            try (MemoryRegion remote = l.pd.allocateAndRegister(1 << 20, access);
                 MemoryRegion local = l.pd.allocateAndRegister(1 << 16, Access.LOCAL_WRITE);
                 SendWorkRequests chain = SendWorkRequests.allocate(1, 1)) {
                remote.segment().asSlice(8192, 1 << 16).fill((byte) 0x3C);
                assertThrows(IndexOutOfBoundsException.class, () -> l.pd.prefetch(remote, (1 << 20) - 100, 4096));
                boolean taken = l.pd.prefetch(remote, 8192, 1 << 16);
                System.out.println("ibv_advise_mr PREFETCH on " + l.context.device().name() + ": " + (taken ? "taken" : "EOPNOTSUPP"));
                chain.get(0).rdmaRead(9, SendFlags.SIGNALED, local, 0, 1 << 16, remote.address() + 8192, remote.rkey());
                l.a.postSend(chain, 1);
                assertEquals(WorkCompletionStatus.SUCCESS, VerbsTestSupport.awaitCompletions(l.cqA, 1).getFirst().status());
                byte[] expected = new byte[1 << 16];
                java.util.Arrays.fill(expected, (byte) 0x3C);
                assertArrayEquals(expected, local.segment().toArray(ValueLayout.JAVA_BYTE));
            }
        }
    }

    /**
     * On-demand regions as the engine uses them, where the device has ODP: the remote side an
     * anonymous or a file mapping (read-only), the local side pinned or on demand with no page touched;
     * 1 MiB read in pieces that start and end on page boundaries, and in pieces of 100,000 bytes that
     * start and end inside pages. Every byte compared; every way that fails is named.
     */
    @Test
    void onDemandRegions_readRemotelyAndReadInto_giveEveryByte(@TempDir Path dir) throws IOException {
        try (Loopback l = Loopback.open()) {
            if (!l.context.queryDevice().supportsOnDemandPaging()) {
                return;
            }
            int size = 1 << 20;
            byte[] payload = new byte[size];
            new java.util.Random(42).nextBytes(payload);
            Path file = Files.write(dir.resolve("on-demand.data"), payload);
            java.util.List<String> wrong = new java.util.ArrayList<>();
            try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ);
                 Arena arena = Arena.ofConfined()) {
                for (String remoteWay : new String[] {"anonymous", "file"}) {
                    for (boolean remoteOnDemand : new boolean[] {true, false}) {
                        for (boolean localOnDemand : new boolean[] {false, true}) {
                            if (!remoteOnDemand && !localOnDemand) {
                                continue;
                            }
                            // -100,000: pieces of 100,000 read as the engine reads them where only page starts
                            // are right, each from the start of its first page (it lands that far in).
                            for (int piece : new int[] {64 << 10, 100_000, -100_000}) {
                                boolean fromPageStart = piece < 0;
                                piece = Math.abs(piece);
                                String way = remoteWay + (remoteOnDemand ? " on demand" : " pinned") + " -> "
                                        + (localOnDemand ? "untouched on demand" : "pinned") + ", pieces of " + piece
                                        + (fromPageStart ? " from page starts" : "");
                                int remoteAccess = Access.REMOTE_READ | (remoteOnDemand ? Access.ON_DEMAND : 0);
                                MemorySegment anon = null;
                                if (remoteWay.equals("anonymous")) {
                                    anon = arena.allocate(size, 4096);
                                    anon.copyFrom(MemorySegment.ofArray(payload));
                                }
                                try (MemoryRegion remote = anon != null ? l.pd.register(anon, remoteAccess)
                                        : l.pd.registerFile(ch, 0, size, remoteAccess);
                                     MemoryRegion local = l.pd.allocateAndRegister(size,
                                             Access.LOCAL_WRITE | (localOnDemand ? Access.ON_DEMAND : 0));
                                     SendWorkRequests chain = SendWorkRequests.allocate(1, 1)) {
                                    for (int off = 0, i = 0; off < size; off += piece, i++) {
                                        int n = Math.min(piece, size - off);
                                        int lead = fromPageStart ? off % 4096 : 0;
                                        chain.get(0).rdmaRead(i, SendFlags.SIGNALED, local, off - lead, n + lead,
                                                remote.address() + off - lead, remote.rkey());
                                        l.a.postSend(chain, 1);
                                        assertEquals(WorkCompletionStatus.SUCCESS,
                                                VerbsTestSupport.awaitCompletions(l.cqA, 1).getFirst().status(), way);
                                    }
                                    int first = java.util.Arrays.mismatch(payload, local.segment().toArray(ValueLayout.JAVA_BYTE));
                                    if (first >= 0) {
                                        wrong.add(way + ": first wrong byte at " + first);
                                    }
                                }
                            }
                        }
                    }
                }
            }
            // OnDemandPagingCheck, which the engine relies on before it registers on demand, must see the same.
            org.rdmashuffle.verbs.OnDemandPagingCheck.Result check =
                    org.rdmashuffle.verbs.OnDemandPagingCheck.check(l.context, l.options.portNumber());
            assertEquals(wrong.isEmpty(), check.failure() == null, "the check says " + check + "; the reads: " + wrong);
            // Reads that start on page boundaries must be right everywhere. rxe in Linux 7.2 and 7.3 gets
            // transfers that start inside a page of an on-demand region wrong (a kernel bug): known, and why
            // the check exists; the engine then reads from page starts, which the check must find right.
            assertTrue(wrong.stream().allMatch(w -> w.contains("pieces of 100000:")),
                    "on-demand reads from page boundaries gave wrong bytes: " + wrong);
            assertTrue(check.usable(), "reads from page starts were right, so the check must allow them: " + check);
            assertEquals(!wrong.isEmpty(), check.pageStartOnly(), check.toString());
            if (!wrong.isEmpty() && l.context.device().name().startsWith("rxe")) {
                org.junit.jupiter.api.Assumptions.abort("known kernel bug: rxe's on-demand paging gets reads not aligned to "
                        + "pages wrong on this kernel (" + System.getProperty("os.version") + "): " + wrong + "; the check: " + check);
            }
            assertEquals(java.util.List.of(), wrong, "on-demand reads that did not give every byte");
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

    /**
     * A file opened for reading only, registered for remote reads: the mapping is read-only, which
     * Linux registers from 6.2 on (the software provider always). On older kernels the pin for write
     * fails and the error says to open the file for writing too (registerFile's fallback needs that).
     */
    @Test
    void aReadOnlyFile_registersFromLinux62_andOlderKernelsSayToOpenItForWriting(@TempDir Path dir) throws IOException {
        byte[] payload = new byte[16 << 10];
        java.util.Arrays.fill(payload, (byte) 0x5A);
        Path file = Files.write(dir.resolve("read-only.data"), payload);
        try (Loopback l = Loopback.open(); FileChannel ch = FileChannel.open(file, StandardOpenOption.READ)) {
            boolean ibverbs = l.context.getClass().getPackageName().endsWith(".ibverbs");
            if (ibverbs && !kernelAtLeast(6, 2)) {
                VerbsException e = assertThrows(VerbsException.class, () -> l.pd.registerFile(ch, 0, payload.length, Access.REMOTE_READ));
                assertTrue(e.getMessage().contains("open the file for reading and writing"), e.getMessage());
                return;
            }
            try (MemoryRegion remote = l.pd.registerFile(ch, 0, payload.length, Access.REMOTE_READ);
                 MemoryRegion local = l.pd.allocateAndRegister(payload.length, Access.LOCAL_WRITE);
                 SendWorkRequests chain = SendWorkRequests.allocate(1, 1)) {
                chain.get(0).rdmaRead(7, SendFlags.SIGNALED, local, 0, payload.length, remote.address(), remote.rkey());
                l.a.postSend(chain, 1);
                assertEquals(WorkCompletionStatus.SUCCESS, VerbsTestSupport.awaitCompletions(l.cqA, 1).getFirst().status());
                assertArrayEquals(payload, local.segment().toArray(ValueLayout.JAVA_BYTE));
            }
        }
    }

    /** Whether the running Linux kernel (os.version, e.g. "6.1.0-28-amd64") is at least major.minor. */
    static boolean kernelAtLeast(int major, int minor) {
        java.util.regex.Matcher m = java.util.regex.Pattern.compile("^(\\d+)\\.(\\d+)").matcher(System.getProperty("os.version"));
        if (!m.find()) {
            throw new IllegalStateException("not a kernel release: " + System.getProperty("os.version"));
        }
        int maj = Integer.parseInt(m.group(1));
        return maj > major || maj == major && Integer.parseInt(m.group(2)) >= minor;
    }
}
