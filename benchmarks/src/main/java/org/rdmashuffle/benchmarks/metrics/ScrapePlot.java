package org.rdmashuffle.benchmarks.metrics;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * Draws what a run's Prometheus scrapes saw ({@code bin/shuffle-job ... --prometheus} prints a
 * "prometheus series" line per run: milliseconds, RDMA bytes, fallback bytes, as the driver's endpoint
 * served them) as an SVG: the figures a dashboard's "bytes fetched" panel would draw, from a real run.
 * {@code ScrapePlot JOB_OUTPUT SVG}; one curve per run in the output, labelled by its round line.
 */
public final class ScrapePlot {
    private static final String SERIES = "prometheus series (ms engine.bytes fallback.bytes):";
    private static final int W = 980;
    private static final int H = 300;
    private static final int LEFT = 70;
    private static final int BOTTOM = 40;

    private ScrapePlot() {
    }

    record Run(String label, List<long[]> points) {
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 2) {
            throw new IllegalArgumentException("usage: ScrapePlot JOB_OUTPUT SVG");
        }
        List<Run> runs = parse(Files.readAllLines(Path.of(args[0])));
        if (runs.isEmpty()) {
            throw new IllegalArgumentException(args[0] + " has no '" + SERIES + "' line: run the job with --prometheus");
        }
        Files.writeString(Path.of(args[1]), svg(runs), StandardCharsets.UTF_8);
    }

    static List<Run> parse(List<String> lines) {
        List<Run> runs = new ArrayList<>();
        String label = "run";
        for (String line : lines) {
            String l = line.strip();
            if (l.startsWith("round ")) {
                label = l.replaceAll("^round (\\d+)\\s+(\\S+).*", "round $1, $2");
            }
            if (l.startsWith(SERIES)) {
                List<long[]> points = new ArrayList<>();
                for (String p : l.substring(SERIES.length()).strip().split("\\s+")) {
                    if (!p.isEmpty()) {
                        String[] f = p.split(",");
                        points.add(new long[] {Long.parseLong(f[0]), Long.parseLong(f[1]), Long.parseLong(f[2])});
                    }
                }
                runs.add(new Run(label, points));
            }
        }
        return runs;
    }

    static String svg(List<Run> runs) {
        long maxMs = 1;
        long maxBytes = 1;
        for (Run r : runs) {
            for (long[] p : r.points()) {
                maxMs = Math.max(maxMs, p[0]);
                maxBytes = Math.max(maxBytes, Math.max(p[1], p[2]));
            }
        }
        StringBuilder b = new StringBuilder();
        b.append("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"").append(W).append("\" height=\"").append(H + 20 * runs.size())
                .append("\" font-family=\"sans-serif\" font-size=\"12\">\n");
        b.append("<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n");
        b.append("<text x=\"").append(LEFT).append("\" y=\"16\">Shuffle bytes fetched, as the driver's /metrics/prometheus served them "
                + "during each run (scraped every 0.5 s)</text>\n");
        int plotW = W - LEFT - 20;
        int plotH = H - BOTTOM - 30;
        int top = 30;
        b.append(line(LEFT, top, LEFT, top + plotH)).append(line(LEFT, top + plotH, LEFT + plotW, top + plotH));
        for (int i = 0; i <= 4; i++) {
            long v = maxBytes * i / 4;
            int y = top + plotH - (int) ((double) plotH * i / 4);
            b.append("<text x=\"").append(LEFT - 6).append("\" y=\"").append(y + 4).append("\" text-anchor=\"end\">")
                    .append(String.format("%.1f MB", v / 1e6)).append("</text>\n");
            long t = maxMs * i / 4;
            int x = LEFT + (int) ((double) plotW * i / 4);
            b.append("<text x=\"").append(x).append("\" y=\"").append(top + plotH + 16).append("\" text-anchor=\"middle\">")
                    .append(String.format("%.1f s", t / 1e3)).append("</text>\n");
        }
        String[] colours = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd"};
        int legend = H;
        for (int r = 0; r < runs.size(); r++) {
            Run run = runs.get(r);
            String colour = colours[r % colours.length];
            for (int k = 1; k <= 2; k++) {
                StringBuilder pts = new StringBuilder();
                boolean any = false;
                for (long[] p : run.points()) {
                    any |= p[k] > 0;
                    pts.append(LEFT + (int) ((double) plotW * p[0] / maxMs)).append(',')
                            .append(top + plotH - (int) ((double) plotH * p[k] / maxBytes)).append(' ');
                }
                if (any || k == 1) {
                    b.append("<polyline fill=\"none\" stroke=\"").append(colour).append("\" stroke-width=\"2\"")
                            .append(k == 2 ? " stroke-dasharray=\"6,4\"" : "").append(" points=\"").append(pts.toString().strip())
                            .append("\"/>\n");
                }
            }
            long last1 = run.points().isEmpty() ? 0 : run.points().getLast()[1];
            long last2 = run.points().isEmpty() ? 0 : run.points().getLast()[2];
            b.append("<text x=\"").append(LEFT).append("\" y=\"").append(legend).append("\" fill=\"").append(colour).append("\">")
                    .append(run.label()).append(": over the engine (solid) ").append(String.format("%.1f MB", last1 / 1e6))
                    .append(", over Spark's transport (dashed) ").append(String.format("%.1f MB", last2 / 1e6))
                    .append(", ").append(run.points().size()).append(" scrapes")
                    .append(run.label().endsWith("builtin") ? " (Spark's own shuffle manager: the plugin carries nothing)" : "")
                    .append("</text>\n");
            legend += 20;
        }
        return b.append("</svg>\n").toString();
    }

    private static String line(int x1, int y1, int x2, int y2) {
        return "<line x1=\"" + x1 + "\" y1=\"" + y1 + "\" x2=\"" + x2 + "\" y2=\"" + y2 + "\" stroke=\"black\"/>\n";
    }
}
