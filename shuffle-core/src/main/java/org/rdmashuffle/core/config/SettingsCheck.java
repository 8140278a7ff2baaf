package org.rdmashuffle.core.config;

import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.Function;

/**
 * Every setting under an adapter's prefix checked at once, before any engine starts (Spark's driver, a
 * MapReduce task or a NodeManager service at its start): the engine's keys ({@link EngineConfig#problems})
 * and the adapter's own ({@link Own}), each bad value one line naming the full key, the value and what is
 * accepted; and each key under the prefix that no code reads, with the known key nearest to it.
 */
public final class SettingsCheck {
    private SettingsCheck() {
    }

    /**
     * A setting an adapter reads for itself (not the engine): its full key, what it accepts (for the error),
     * and what is wrong with the value set for it -- read the way the adapter reads it, e.g. "not a boolean"
     * or "out of range" -- or null if nothing is. {@code problem} is asked only for a key that is set.
     */
    public record Own(String key, String accepted, Function<String, String> problem) {
    }

    /** What a check found: bad values (errors) and keys nobody reads (warnings), one line each. */
    public record Findings(List<String> errors, List<String> warnings) {
        /** The errors as one line. */
        public String errorLine() {
            return String.join(EngineConfig.PROBLEM_SEPARATOR, errors);
        }
    }

    /**
     * Checks every setting under {@code prefix}: the engine's, read from {@code source}, and {@code own};
     * {@code keysSet} are the full keys set under the prefix (the unknown ones among them are warned about).
     */
    public static Findings check(String prefix, SettingSource source, Collection<String> keysSet, Collection<Own> own) {
        List<String> errors = new ArrayList<>(EngineConfig.problems(prefix, source));
        for (Own o : own) {
            String text = source.get(o.key());
            if (text == null) {
                continue;
            }
            String problem;
            try {
                problem = o.problem().apply(o.key());
            } catch (RuntimeException e) {
                problem = "does not read (" + e.getMessage() + ")";
            }
            if (problem != null) {
                errors.add(o.key() + "=" + text + ": " + problem + "; expected " + o.accepted());
            }
        }
        Set<String> known = knownKeys(prefix, own);
        List<String> warnings = new ArrayList<>();
        for (String key : new TreeSet<>(keysSet)) {
            if (key.startsWith(prefix) && !known.contains(key)) {
                warnings.add(key + " is not a setting of rdma-shuffle; did you mean " + nearest(key, known) + "?");
            }
        }
        return new Findings(List.copyOf(errors), List.copyOf(warnings));
    }

    /** Every full key an adapter reads under {@code prefix}: the engine's and its own. */
    public static Set<String> knownKeys(String prefix, Collection<Own> own) {
        Set<String> known = new LinkedHashSet<>();
        for (String key : EngineConfig.keys()) {
            known.add(prefix + key);
        }
        for (Own o : own) {
            known.add(o.key());
        }
        return known;
    }

    /** The key of {@code known} fewest edits (insertions, deletions, substitutions; case ignored) away from {@code key}. */
    public static String nearest(String key, Collection<String> known) {
        String best = null;
        int bestDistance = Integer.MAX_VALUE;
        for (String k : known) {
            int d = editDistance(key.toLowerCase(Locale.ROOT), k.toLowerCase(Locale.ROOT));
            if (d < bestDistance) {
                best = k;
                bestDistance = d;
            }
        }
        return best;
    }

    /** Levenshtein distance. */
    static int editDistance(String a, String b) {
        int[] previous = new int[b.length() + 1];
        int[] current = new int[b.length() + 1];
        for (int j = 0; j <= b.length(); j++) {
            previous[j] = j;
        }
        for (int i = 1; i <= a.length(); i++) {
            current[0] = i;
            for (int j = 1; j <= b.length(); j++) {
                int substitute = previous[j - 1] + (a.charAt(i - 1) == b.charAt(j - 1) ? 0 : 1);
                current[j] = Math.min(substitute, Math.min(previous[j], current[j - 1]) + 1);
            }
            int[] t = previous;
            previous = current;
            current = t;
        }
        return previous[b.length()];
    }
}
