package org.rdmashuffle.core.protocol;

import java.nio.BufferUnderflowException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;

import org.rdmashuffle.verbs.Gid;
import org.rdmashuffle.verbs.Mtu;
import org.rdmashuffle.verbs.QueuePairEndpoint;

/**
 * The queue-pair endpoints peers exchange over the authenticated control plane: QPN, PSN, GID, LID,
 * MTU and, for the software provider, the admission token. Fixed layout, strictly parsed: a
 * malformed endpoint is a {@link MalformedMessageException}, never a half-read one.
 */
public final class EndpointCodec {
    private static final int MAX_TOKEN = 256;

    private EndpointCodec() {
    }

    public static byte[] encode(QueuePairEndpoint e) {
        byte[] token = e.admissionToken() == null ? new byte[0] : e.admissionToken().getBytes(StandardCharsets.US_ASCII);
        return ByteBuffer.allocate(4 + 4 + Gid.BYTES + 4 + 1 + 1 + 2 + token.length)
                .putInt(e.qpNumber()).putInt(e.psn()).put(e.gid().bytes()).putInt(e.lid()).put((byte) e.mtu().code())
                .put((byte) (e.admissionToken() == null ? 0 : 1)).putShort((short) token.length).put(token).array();
    }

    public static QueuePairEndpoint decode(byte[] bytes) {
        try {
            ByteBuffer in = ByteBuffer.wrap(bytes);
            int qpn = in.getInt();
            int psn = in.getInt();
            byte[] gid = new byte[Gid.BYTES];
            in.get(gid);
            int lid = in.getInt();
            Mtu mtu = Mtu.of(in.get());
            boolean hasToken = in.get() == 1;
            int tokenLength = in.getShort() & 0xFFFF;
            if (tokenLength > MAX_TOKEN || tokenLength != in.remaining() || (!hasToken && tokenLength != 0)) {
                throw new MalformedMessageException("endpoint with a token of " + tokenLength + " bytes and "
                        + in.remaining() + " bytes left");
            }
            byte[] token = new byte[tokenLength];
            in.get(token);
            for (byte b : token) {
                // Printable ASCII only: anything else would not survive a String (fuzzing found bytes >= 0x80
                // turned into '?', so two tokens on the wire became one).
                if (b < 0x21 || b > 0x7E) {
                    throw new MalformedMessageException("endpoint with a token byte 0x" + Integer.toHexString(b & 0xFF)
                            + ": tokens are printable ASCII");
                }
            }
            if (lid < 0 || lid > 0xFFFF) {
                throw new MalformedMessageException("endpoint with LID " + lid);
            }
            return new QueuePairEndpoint(qpn, psn, Gid.of(gid), lid, mtu,
                    hasToken ? new String(token, StandardCharsets.US_ASCII) : null);
        } catch (BufferUnderflowException e) {
            throw new MalformedMessageException("endpoint of " + bytes.length + " bytes is truncated", e);
        } catch (IllegalArgumentException e) {
            throw new MalformedMessageException("invalid endpoint: " + e.getMessage(), e);
        }
    }
}
