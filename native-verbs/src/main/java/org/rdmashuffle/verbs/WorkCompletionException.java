package org.rdmashuffle.verbs;

/** A work request completed with an error status. */
public final class WorkCompletionException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    private final WorkCompletionStatus status;
    private final int vendorError;
    private final long wrId;
    private final int qpNumber;

    public WorkCompletionException(WorkCompletionStatus status, int vendorError, long wrId, int qpNumber) {
        // Only wr_id, status, vendor_err and qp_num are defined in an error completion.
        super("work request wr_id " + wrId + " on QP " + qpNumber + " completed with " + status + " ("
                + status.description() + "), vendor error 0x" + Integer.toHexString(vendorError));
        this.status = status;
        this.vendorError = vendorError;
        this.wrId = wrId;
        this.qpNumber = qpNumber;
    }

    public WorkCompletionStatus status() {
        return status;
    }

    public int vendorError() {
        return vendorError;
    }

    public long wrId() {
        return wrId;
    }

    public int qpNumber() {
        return qpNumber;
    }
}
