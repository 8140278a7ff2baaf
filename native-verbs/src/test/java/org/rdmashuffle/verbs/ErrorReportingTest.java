package org.rdmashuffle.verbs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;

import org.junit.jupiter.api.Test;
import org.rdmashuffle.verbs.ffi.ibv_wc;

/** Errors carry the call, errno with its name and text, and for posts and completions which request failed. */
class ErrorReportingTest {

    @Test
    void verbsExceptionNamesCallAndErrno() {
        VerbsException e = new VerbsException("ibv_modify_qp(RTR, QP 17)", Errno.EINVAL, null);
        assertEquals("ibv_modify_qp(RTR, QP 17) failed: errno 22 EINVAL (Invalid argument)", e.getMessage());
        assertEquals(22, e.errno());
        assertEquals("ibv_modify_qp(RTR, QP 17)", e.call());
    }

    @Test
    void postExceptionNamesTheBadRequest() {
        PostException e = new PostException("ibv_post_send", Errno.ENOMEM, 3, 903L, 8);
        assertTrue(e.getMessage().contains("ibv_post_send failed: errno 12 ENOMEM"), e.getMessage());
        assertTrue(e.getMessage().contains("work request #3 (wr_id 903) of a chain of 8 was refused; the 3 before it were posted"),
                e.getMessage());
        assertEquals(3, e.postedBefore());
    }

    @Test
    void errorCompletionCarriesStatusNameAndVendorError() {
        try (WorkCompletions wc = WorkCompletions.allocate(2)) {
            long base = ibv_wc.layout().byteSize();
            wc.memory().set(ValueLayout.JAVA_LONG, base + ibv_wc.wr_id$offset(), 41L);
            wc.memory().set(ValueLayout.JAVA_INT, base + ibv_wc.status$offset(), WorkCompletionStatus.REM_ACCESS_ERR.code());
            wc.memory().set(ValueLayout.JAVA_INT, base + ibv_wc.vendor_err$offset(), 0x88);
            wc.memory().set(ValueLayout.JAVA_INT, base + ibv_wc.qp_num$offset(), 0x11);
            wc.memory().set(ValueLayout.JAVA_INT.withOrder(ByteOrder.BIG_ENDIAN), base + ibv_wc.imm_data$offset(), 0x0A0B0C0D);
            assertEquals(0x0A0B0C0D, wc.immediate(1));
            assertTrue(!wc.isSuccess(1));
            WorkCompletionException e = wc.failure(1);
            assertEquals("work request wr_id 41 on QP 17 completed with REM_ACCESS_ERR (remote access error), vendor error 0x88",
                    e.getMessage());
            assertEquals(WorkCompletionStatus.REM_ACCESS_ERR, e.status());
            assertEquals(0x88, e.vendorError());
        }
    }

    @Test
    void unknownStatusCodesDoNotThrow() {
        assertEquals(WorkCompletionStatus.GENERAL_ERR, WorkCompletionStatus.of(999));
        assertEquals(WorkCompletionOpcode.UNKNOWN, WorkCompletionOpcode.of(77));
    }
}
