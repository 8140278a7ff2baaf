package org.rdmashuffle.core.protocol;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;

import com.code_intelligence.jazzer.junit.FuzzTest;


/**
 * The metadata messages a peer's queue pair delivers into our receive buffers (fetch requests on the
 * serving side, responses and errors on the reducer's): {@link MessageCodec#decode} of any bytes either
 * refuses them with a {@link MalformedMessageException} or returns a message that {@link
 * MessageCodec#encode} writes again and that decodes to the same message (the encoder's only liberty: an
 * error's reason is cut at 4096 characters). Anything else that escapes -- another exception, an Error, an
 * allocation the input's size does not bound -- is a finding. docs/fuzzing.md
 */
class MessageCodecFuzzTest {
    /** What the engine's receive buffers hold per message by default (32 KiB). */
    private static final int MAX_MESSAGE_BYTES = 32 << 10;
    private static final int MAX_REASON_CHARS = 4096;

    private static final MessageCodec CODEC = new MessageCodec(MAX_MESSAGE_BYTES);
    private static final MemorySegment OUT = MemorySegment.ofArray(new byte[MAX_MESSAGE_BYTES]);

    @FuzzTest
    void decode(byte[] received) {
        // The received bytes sit at the start of a larger receive buffer, as they do in a registered one.
        byte[] buffer = Arrays.copyOf(received, Math.min(MAX_MESSAGE_BYTES, received.length + 16));
        Message decoded;
        try {
            decoded = CODEC.decode(MemorySegment.ofArray(buffer), received.length);
        } catch (MalformedMessageException refused) {
            return;
        }
        assertTrue(received.length > 0 && received.length <= MAX_MESSAGE_BYTES, "decoded a message of " + received.length
                + " bytes");

        int length = CODEC.encode(decoded, OUT);
        byte[] encoded = OUT.asSlice(0, length).toArray(java.lang.foreign.ValueLayout.JAVA_BYTE);
        Message again = CODEC.decode(MemorySegment.ofArray(encoded), length);
        assertSame(asEncoded(decoded), again);
        // The encoding of a decoded message is canonical: encoding it once more gives the same bytes.
        int length2 = CODEC.encode(again, OUT);
        assertArrayEquals(encoded, OUT.asSlice(0, length2).toArray(java.lang.foreign.ValueLayout.JAVA_BYTE),
                "encodings of " + again + " differ");
    }

    /** The message as the encoder writes it: an error's reason cut at {@value #MAX_REASON_CHARS} characters. */
    private static Message asEncoded(Message m) {
        if (m instanceof Message.ErrorResponse e && e.reason().length() > MAX_REASON_CHARS) {
            String cut = new String(e.reason().substring(0, MAX_REASON_CHARS).getBytes(StandardCharsets.UTF_8),
                    StandardCharsets.UTF_8);
            return new Message.ErrorResponse(e.requestId(), e.kind(), e.block(), cut);
        }
        return m;
    }

    /** Equality of messages, with layouts compared by content (their offsets are arrays). */
    private static void assertSame(Message expected, Message actual) {
        if (expected instanceof Message.FetchResponse r && actual instanceof Message.FetchResponse a) {
            assertEquals(r.requestId(), a.requestId());
            assertEquals(r.blocks(), a.blocks());
            assertEquals(r.layouts().size(), a.layouts().size(), "layouts");
            for (int i = 0; i < r.layouts().size(); i++) {
                MapOutputLayout x = r.layouts().get(i);
                MapOutputLayout y = a.layouts().get(i);
                assertEquals(x.shuffleId(), y.shuffleId());
                assertEquals(x.mapId(), y.mapId());
                assertEquals(x.address(), y.address());
                assertEquals(x.rkey(), y.rkey());
                assertArrayEquals(x.offsets(), y.offsets(), "offsets of layout " + i);
            }
        } else {
            assertEquals(expected, actual, "a decoded message does not survive encoding and decoding");
        }
    }
}
