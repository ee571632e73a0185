extension BenchmarkReport {
    /// Four panels, one per load-discipline simulation: the figure without the
    /// feature (grey) and with it (blue), on the panel's own linear scale, with the
    /// goal as a dashed line.
    static func loadDisciplineChart(_ results: SimulationCatalog.LoadDisciplineResults) -> SVGDocument {
        struct Panel {
            var title: String
            var unit: String
            var without: Double
            var with: Double
            var goal: Double
            var digits: Int
        }
        var panels: [Panel] = []
        if let off = results.nested.first(where: { !$0.guarded }), let on = results.nested.first(where: \.guarded) {
            panels.append(
                Panel(
                    title: "Three nested layers of 3 attempts, failing server", unit: "attempts per request",
                    without: off.attemptsPerRequest, with: on.attemptsPerRequest, goal: 3, digits: 2))
        }
        if let off = results.throttling.first(where: { !$0.throttling }),
            let on = results.throttling.first(where: \.throttling)
        {
            panels.append(
                Panel(
                    title: "Full outage, after the first window", unit: "requests reaching the server per offered",
                    without: off.serverRequestsPerOffered, with: on.serverRequestsPerOffered, goal: 0.1, digits: 3))
        }
        if let off = results.rateLimit.first(where: { !$0.honoured }),
            let on = results.rateLimit.first(where: \.honoured)
        {
            panels.append(
                Panel(
                    title: "Server publishing RateLimit, client asking for twice its quota",
                    unit: "429s after the first response", without: Double(off.tooManyRequests),
                    with: Double(on.tooManyRequests), goal: 0, digits: 0))
        }
        if let off = results.probeWaves.first(where: { !$0.jitter }), let on = results.probeWaves.first(where: \.jitter)
        {
            panels.append(
                Panel(
                    title: "100 breakers tripping together", unit: "largest share of probes in one 100 ms slot",
                    without: off.maxProbesPer100msShare, with: on.maxProbesPer100msShare, goal: 0.25, digits: 2))
        }
        let width = 760.0
        let labelWidth = 150.0
        let plotWidth = 480.0
        let panelHeight = 92.0
        let top = 56.0
        var svg = SVGDocument(width: width, height: top + panelHeight * Double(panels.count) + 30)
        svg.text("What the library does to a server", x: 10, y: 22, size: 15, weight: "bold")
        svg.text(
            "each simulation without its feature (grey) and with it (blue); dashed: the goal; seeded, deterministic",
            x: 10, y: 40, size: 11, fill: "#555555")
        for (index, panel) in panels.enumerated() {
            let y = top + panelHeight * Double(index)
            let scale = Swift.max(panel.without, panel.with, panel.goal, 1e-9) * 1.1
            svg.text(panel.title, x: 10, y: y + 14, size: 12, weight: "bold")
            svg.text(panel.unit, x: 10, y: y + 30, size: 11, fill: "#555555")
            for (row, (label, value, color)) in [
                ("without", panel.without, "#9a9a9a"), ("with", panel.with, "#2f6db3"),
            ].enumerated() {
                let barY = y + 38 + Double(row) * 22
                svg.text(label, x: labelWidth - 8, y: barY + 13, size: 11, anchor: "end")
                svg.rectangle(x: labelWidth, y: barY, width: plotWidth * value / scale, height: 16, fill: color)
                svg.text(
                    Format.decimal(value, panel.digits), x: labelWidth + plotWidth * value / scale + 6, y: barY + 13,
                    size: 11)
            }
            let goalX = labelWidth + plotWidth * panel.goal / scale
            svg.line(x1: goalX, y1: y + 34, x2: goalX, y2: y + 82, stroke: "#b3452f", dashed: true)
            svg.text(
                "goal \(Format.decimal(panel.goal, panel.digits))", x: goalX + 4, y: y + 34, size: 10, fill: "#b3452f")
        }
        return svg
    }
}
