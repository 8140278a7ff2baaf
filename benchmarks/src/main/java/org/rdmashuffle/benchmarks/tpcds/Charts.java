package org.rdmashuffle.benchmarks.tpcds;

import java.awt.BasicStroke;
import java.awt.Color;
import java.awt.Font;
import java.awt.Graphics2D;
import java.awt.RenderingHints;
import java.awt.geom.AffineTransform;
import java.awt.image.BufferedImage;
import java.io.IOException;
import java.nio.file.Path;
import java.util.List;

import javax.imageio.ImageIO;

/** Plain bar charts as PNG, drawn with Java2D (no charting library, no display needed). */
final class Charts {
    private Charts() {
    }

    /**
     * One bar per label; {@code reference} draws a dashed line (e.g. 1.0 for a ratio), NaN for none.
     */
    static void bars(Path png, String title, String yLabel, List<String> labels, double[] values, double reference,
                     Color color) throws IOException {
        int n = labels.size();
        int barWidth = n > 40 ? 9 : n > 10 ? 18 : 80;
        int left = 80;
        Font titleFont = new Font(Font.SANS_SERIF, Font.BOLD, 14);
        Font labelFont = new Font(Font.SANS_SERIF, Font.PLAIN, 11);
        int titleWidth = new BufferedImage(1, 1, BufferedImage.TYPE_INT_RGB).createGraphics().getFontMetrics(titleFont)
                .stringWidth(title);
        // Wide enough for the bars and for the whole title.
        int width = Math.max(480, Math.max(left + 40 + n * (barWidth + 4), left + titleWidth + 20));
        int height = 420;
        int top = 50;
        int bottom = 90;
        double max = 0;
        for (double v : values) {
            max = Math.max(max, v);
        }
        if (!Double.isNaN(reference)) {
            max = Math.max(max, reference);
        }
        max = max <= 0 ? 1 : max * 1.1;
        BufferedImage img = new BufferedImage(width, height, BufferedImage.TYPE_INT_RGB);
        Graphics2D g = img.createGraphics();
        g.setRenderingHint(RenderingHints.KEY_ANTIALIASING, RenderingHints.VALUE_ANTIALIAS_ON);
        g.setRenderingHint(RenderingHints.KEY_TEXT_ANTIALIASING, RenderingHints.VALUE_TEXT_ANTIALIAS_ON);
        g.setColor(Color.WHITE);
        g.fillRect(0, 0, width, height);
        g.setColor(Color.BLACK);
        g.setFont(titleFont);
        g.drawString(title, left, 25);
        g.setFont(labelFont);
        int plotHeight = height - top - bottom;
        g.drawLine(left, top, left, top + plotHeight);
        g.drawLine(left, top + plotHeight, width - 20, top + plotHeight);
        for (int t = 0; t <= 4; t++) {
            double v = max * t / 4;
            int y = top + plotHeight - (int) (plotHeight * t / 4.0);
            String tick = String.format("%.3g", v);
            g.drawString(tick, left - 6 - g.getFontMetrics().stringWidth(tick), y + 4); // right-aligned: clear of the axis label
            g.setColor(new Color(230, 230, 230));
            g.drawLine(left + 1, y, width - 20, y);
            g.setColor(Color.BLACK);
        }
        AffineTransform normal = g.getTransform();
        g.rotate(-Math.PI / 2);
        g.drawString(yLabel, -(top + plotHeight / 2 + yLabel.length() * 3), 15);
        g.setTransform(normal);
        for (int i = 0; i < n; i++) {
            int x = left + 6 + i * (barWidth + 4);
            int h = (int) (plotHeight * values[i] / max);
            g.setColor(color);
            g.fillRect(x, top + plotHeight - h, barWidth, h);
            g.setColor(Color.BLACK);
            g.rotate(-Math.PI / 2, x + barWidth / 2.0 + 4, top + plotHeight + 8);
            g.drawString(labels.get(i), (int) (x + barWidth / 2.0 + 4) - g.getFontMetrics().stringWidth(labels.get(i)),
                    top + plotHeight + 8);
            g.setTransform(normal);
        }
        if (!Double.isNaN(reference)) {
            int y = top + plotHeight - (int) (plotHeight * reference / max);
            g.setColor(Color.RED);
            g.setStroke(new BasicStroke(1.5f, BasicStroke.CAP_BUTT, BasicStroke.JOIN_MITER, 10, new float[] {6, 4}, 0));
            g.drawLine(left, y, width - 20, y);
        }
        g.dispose();
        ImageIO.write(img, "png", png.toFile());
    }
}
