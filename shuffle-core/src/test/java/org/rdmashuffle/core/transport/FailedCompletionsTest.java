package org.rdmashuffle.core.transport;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Optional;

import org.junit.jupiter.api.Test;
import org.rdmashuffle.verbs.Gid;
import org.rdmashuffle.verbs.GidChoice;
import org.rdmashuffle.verbs.Trouble;
import org.rdmashuffle.verbs.WorkCompletionStatus;

/** Which trouble each failed completion names, with the path's addresses and MTU. */
class FailedCompletionsTest {
    private static final Gid OURS = Gid.of(new byte[] {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, (byte) 0xff, (byte) 0xff, 10, 0, 0, 1});
    private static final Gid THEIRS = Gid.of(new byte[] {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, (byte) 0xff, (byte) 0xff, 10, 0, 0, 2});
    private final FailedCompletions explain = new FailedCompletions(new GidChoice(1, OURS, "test"), "rxe0", 1, 1024);

    @Test
    void aReadWhoseResponsesNeverArrive_namesThePathMtu_andBothGids() {
        String s = explain.read(WorkCompletionStatus.RETRY_EXC_ERR, "fetching connection to 10.0.0.2:7000", THEIRS);
        assertEquals(Optional.of(Trouble.PATH_MTU), Trouble.in(s), s);
        assertTrue(s.contains("1024-byte") && s.contains(THEIRS.toString()) && s.contains("GID[1] " + OURS), s);
    }

    @Test
    void aSendNeverAcknowledged_namesTheUnreachableGid() {
        String s = explain.send(WorkCompletionStatus.RETRY_EXC_ERR, "fetching connection to 10.0.0.2:7000", THEIRS);
        assertEquals(Optional.of(Trouble.GID_UNREACHABLE), Trouble.in(s), s);
        assertTrue(s.contains("UDP 4791"), s);
    }

    @Test
    void aRefusedRead_namesRemoteAccess_andOtherStatusesNothing() {
        assertEquals(Optional.of(Trouble.REMOTE_ACCESS), Trouble.in(explain.read(WorkCompletionStatus.REM_ACCESS_ERR, "p", THEIRS)));
        assertEquals("", explain.read(WorkCompletionStatus.WR_FLUSH_ERR, "p", THEIRS));
        assertEquals("", explain.send(WorkCompletionStatus.REM_ACCESS_ERR, "p", THEIRS));
    }
}
