package org.rdmashuffle.verbs.software;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

import org.junit.jupiter.api.io.TempDir;
import org.rdmashuffle.verbs.Access;
import org.rdmashuffle.verbs.MemoryRegion;
import org.rdmashuffle.verbs.QueuePairState;
import org.rdmashuffle.verbs.SendFlags;
import org.rdmashuffle.verbs.SendWorkRequests;
import org.rdmashuffle.verbs.WorkCompletionStatus;
import org.rdmashuffle.verbs.conformance.VerbsTestSupport;
import org.rdmashuffle.verbs.conformance.VerbsTestSupport.Completion;

/**
 * Reads of a file registered read-only with {@code registerOwnedFile} are answered from the file
 * (with sendfile on: sendfile as far as the socket takes at once, the rest through the mapping; off:
 * the mapping): the bytes are the file's at every offset and size, and a file cut short under its
 * region fails the read, never hangs.
 */
class SoftwareFileRegionTest {
    private static final int FILE_BYTES = 16 << 20;

    @TempDir
    Path dir;

    private Path fileOfPattern() throws IOException {
        Path f = dir.resolve("map.data");
        try (FileChannel ch = FileChannel.open(f, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE)) {
            ByteBuffer b = ByteBuffer.allocate(1 << 20).order(java.nio.ByteOrder.nativeOrder());
            for (int mib = 0; mib < FILE_BYTES >> 20; mib++) {
                b.clear();
                for (int i = 0; i < b.capacity(); i += 4) {
                    b.putInt(i, (mib << 20) + i); // every 4 bytes: their own offset in the file
                }
                ch.write(b);
            }
        }
        return f;
    }

    @org.junit.jupiter.params.ParameterizedTest(name = "sendfile {0}")
    @org.junit.jupiter.params.provider.ValueSource(booleans = {true, false})
    void readsOfAFileBackedRegion_returnTheFilesBytes_atAnyOffsetAndSize_evenBeyondWhatTheSocketTakesAtOnce(boolean sendfile)
            throws Exception {
        Path file = fileOfPattern();
        try (SoftwarePair pair = new SoftwarePair(SoftwareProvider.Config.loopback().withSendfile(sendfile)).connect(SoftwarePair.OPTIONS);
             MemoryRegion local = pair.requesterPd.allocateAndRegister(FILE_BYTES, Access.LOCAL_WRITE);
             MemoryRegion mapped = pair.responderPd.registerOwnedFile(FileChannel.open(file, StandardOpenOption.READ), 0,
                     FILE_BYTES, Access.REMOTE_READ);
             SendWorkRequests chain = SendWorkRequests.allocate(3, 1)) {
            // 12 MiB is more than a loopback socket buffer takes at once: part of it goes through the mapping.
            long[][] reads = {{4, 100}, {65536, 1 << 20}, {2 << 20, 12 << 20}};
            for (int i = 0; i < reads.length; i++) {
                chain.get(i).rdmaRead(i, SendFlags.SIGNALED, local, reads[i][0], (int) reads[i][1], mapped.address() + reads[i][0],
                        mapped.rkey());
            }
            pair.requester.postSend(chain, 3);
            for (Completion c : VerbsTestSupport.awaitCompletions(pair.requesterCq, 3)) {
                assertEquals(WorkCompletionStatus.SUCCESS, c.status(), c.toString());
            }
            MemorySegment got = local.segment();
            for (long[] r : reads) {
                for (long at = r[0] + (4 - r[0] % 4) % 4; at + 4 <= r[0] + r[1]; at += 4093 * 4) {
                    assertEquals((int) at, got.get(ValueLayout.JAVA_INT_UNALIGNED, at), "the file's bytes at offset " + at);
                }
                long last = (r[0] + r[1] - 4) & ~3L;
                assertEquals((int) last, got.get(ValueLayout.JAVA_INT_UNALIGNED, last));
            }
        }
    }

    @org.junit.jupiter.params.ParameterizedTest(name = "sendfile {0}")
    @org.junit.jupiter.params.provider.ValueSource(booleans = {true, false})
    void aFileCutShortUnderItsRegion_failsTheRead_andNeitherHangsNorCrashes(boolean sendfile) throws Exception {
        Path file = fileOfPattern();
        try (SoftwarePair pair = new SoftwarePair(SoftwareProvider.Config.loopback().withSendfile(sendfile)).connect(SoftwarePair.OPTIONS);
             MemoryRegion local = pair.requesterPd.allocateAndRegister(1 << 20, Access.LOCAL_WRITE);
             MemoryRegion mapped = pair.responderPd.registerOwnedFile(FileChannel.open(file, StandardOpenOption.READ), 0,
                     FILE_BYTES, Access.REMOTE_READ);
             SendWorkRequests chain = SendWorkRequests.allocate(1, 1)) {
            try (FileChannel owner = FileChannel.open(file, StandardOpenOption.WRITE)) {
                owner.truncate(1 << 20); // the output's owner cuts it after it was registered
            }
            chain.get(0).rdmaRead(1, SendFlags.SIGNALED, local, 0, 1 << 20, mapped.address() + (8 << 20), mapped.rkey());
            pair.requester.postSend(chain, 1);
            Completion c = VerbsTestSupport.awaitCompletions(pair.requesterCq, 1).getFirst();
            assertTrue(c.status() != WorkCompletionStatus.SUCCESS, "a read past the file's end cannot succeed: " + c);
            assertEquals(QueuePairState.ERR, pair.requester.query().state());
        }
    }
}
