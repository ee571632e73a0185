import Foundation

extension BenchmarkReport {
    /// The charts of `--svg DIR`, as file names and documents.
    var charts: [(fileName: String, document: SVGDocument)] {
        var charts: [(String, SVGDocument)] = []
        for caller in Caller.allCases {
            let rows = self.overhead.filter { $0.configuration.caller == caller }
            if !rows.isEmpty {
                charts.append(("overhead-\(caller.rawValue).svg", Self.overheadChart(rows, caller: caller)))
            }
        }
        if !self.simulations.contention.isEmpty {
            charts.append(("contention.svg", Self.contentionChart(self.simulations.contention)))
        }
        if !self.simulations.loadDiscipline.nested.isEmpty {
            charts.append(("load-discipline.svg", Self.loadDisciplineChart(self.simulations.loadDiscipline)))
        }
        return charts
    }

    /// Writes every chart into `directory`, creating it if needed; returns the paths written.
    func writeCharts(to directory: String) throws -> [String] {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        var paths: [String] = []
        for chart in self.charts {
            let path = (directory as NSString).appendingPathComponent(chart.fileName)
            try chart.document.serialized.write(toFile: path, atomically: true, encoding: .utf8)
            paths.append(path)
        }
        return paths
    }

    private static let libraryColor = "#2f6db3"
    private static let directColor = "#7a7a7a"
    private static let seedColor = "#d08a2c"
    private static let actorColor = "#b3452f"

    private static func color(forRow name: String) -> String {
        if name == "direct" { return Self.directColor }
        if name.hasPrefix("seed-design.") { return Self.seedColor }
        if name.hasPrefix("actor-per-call.") { return Self.actorColor }
        return Self.libraryColor
    }

    /// Horizontal bars of the median cost per call on a log scale, with min-max whiskers
    /// and a dashed line at the direct call.
    private static func overheadChart(_ rows: [OverheadResult], caller: Caller) -> SVGDocument {
        let labelWidth = 300.0
        let plotWidth = 440.0
        let valueWidth = 150.0
        let rowHeight = 22.0
        let top = 56.0
        let width = labelWidth + plotWidth + valueWidth + 20
        let height = top + rowHeight * Double(rows.count) + 70
        var svg = SVGDocument(width: width, height: height)
        svg.text(
            "Cost per call from a \(caller == .mainActor ? "main-actor" : "nonisolated") caller (log scale)",
            x: 10, y: 22, size: 15, weight: "bold")
        svg.text(
            "median ns per call; whiskers: min-max of the repetitions; dashed: direct call, one task",
            x: 10, y: 40, size: 11, fill: "#555555")

        let values = rows.flatMap { [$0.subject.minimum, $0.subject.maximum, $0.baseline.median] }
        let lower = pow(10, floor(log10(Swift.max(values.min() ?? 1, 0.1))))
        let upper = pow(10, ceil(log10(Swift.max(values.max() ?? 10, lower * 10))))
        func x(_ value: Double) -> Double {
            let clamped = Swift.min(Swift.max(value, lower), upper)
            return labelWidth + plotWidth * (log10(clamped) - log10(lower)) / (log10(upper) - log10(lower))
        }
        let plotBottom = top + rowHeight * Double(rows.count)
        var decade = lower
        while decade <= upper * 1.001 {
            svg.line(x1: x(decade), y1: top - 4, x2: x(decade), y2: plotBottom, stroke: "#e2e2e2")
            svg.text(Self.axisLabel(decade), x: x(decade), y: plotBottom + 16, size: 11, anchor: "middle")
            decade *= 10
        }
        svg.text("ns per call", x: labelWidth + plotWidth / 2, y: plotBottom + 34, size: 11, anchor: "middle")
        let legend = [
            ("direct call", Self.directColor), ("swift-resilience", Self.libraryColor),
            ("seed-design comparator", Self.seedColor), ("actor-per-call comparator", Self.actorColor),
        ]
        var legendX = 10.0
        for (title, color) in legend {
            svg.rectangle(x: legendX, y: plotBottom + 46, width: 12, height: 12, fill: color)
            svg.text(title, x: legendX + 17, y: plotBottom + 56, size: 11)
            legendX += 30 + Double(title.count) * 6.2
        }

        for (index, row) in rows.enumerated() {
            let y = top + rowHeight * Double(index)
            let label = row.configuration.tasks > 1 ? "\(row.name) (\(row.configuration.tasks) tasks)" : row.name
            svg.text(label, x: labelWidth - 8, y: y + 15, size: 12, anchor: "end")
            svg.rectangle(
                x: labelWidth, y: y + 4, width: x(row.subject.median) - labelWidth, height: rowHeight - 8,
                fill: Self.color(forRow: row.name))
            svg.line(
                x1: x(row.subject.minimum), y1: y + rowHeight / 2, x2: x(row.subject.maximum), y2: y + rowHeight / 2,
                stroke: "#222222")
            svg.line(
                x1: x(row.subject.minimum), y1: y + 7, x2: x(row.subject.minimum), y2: y + rowHeight - 7,
                stroke: "#222222")
            svg.line(
                x1: x(row.subject.maximum), y1: y + 7, x2: x(row.subject.maximum), y2: y + rowHeight - 7,
                stroke: "#222222")
            svg.text(
                "\(Format.nanoseconds(row.subject.median)) ns  (\(Format.decimal(row.ratio, 2))x)",
                x: labelWidth + plotWidth + 8, y: y + 15, size: 11)
        }
        if let direct = rows.first(where: { $0.name == "direct" && $0.configuration.tasks == 1 }) {
            svg.line(
                x1: x(direct.subject.median), y1: top - 4, x2: x(direct.subject.median), y2: plotBottom,
                stroke: "#222222", dashed: true)
        }
        return svg
    }

    /// Write calls against completion time per schedule, with the reference figures as hollow circles.
    private static func contentionChart(_ rows: [ContentionResult]) -> SVGDocument {
        let left = 70.0
        let top = 64.0
        let plotWidth = 560.0
        let plotHeight = 340.0
        var svg = SVGDocument(width: left + plotWidth + 200, height: top + plotHeight + 60)
        svg.text("Contention: work against completion time per schedule", x: 10, y: 22, size: 15, weight: "bold")
        svg.text(
            "Brooker's model (AWS Architecture Blog, 2015), 100 clients, mean of 100 trials; filled: this run, "
                + "hollow: an independent re-run",
            x: 10, y: 40, size: 11, fill: "#555555")

        let anchorPoints = rows.compactMap { row in ContentionReference.figures[row.schedule] }
        let seconds = rows.map { $0.completionMilliseconds / 1_000 } + anchorPoints.map(\.completionSeconds)
        let calls = rows.map(\.calls) + anchorPoints.map(\.calls)
        let lowerSeconds = pow(10, floor(log10(Swift.max(seconds.min() ?? 1, 0.01))))
        let upperSeconds = pow(10, ceil(log10(Swift.max(seconds.max() ?? 10, lowerSeconds * 10))))
        let upperCalls = ceil((calls.max() ?? 1_000) * 1.1 / 500) * 500
        func x(_ value: Double) -> Double {
            left + plotWidth * (log10(value) - log10(lowerSeconds)) / (log10(upperSeconds) - log10(lowerSeconds))
        }
        func y(_ value: Double) -> Double {
            top + plotHeight * (1 - value / upperCalls)
        }
        svg.rectangle(x: left, y: top, width: plotWidth, height: plotHeight, fill: "none", stroke: "#999999")
        var decade = lowerSeconds
        while decade <= upperSeconds * 1.001 {
            svg.line(x1: x(decade), y1: top, x2: x(decade), y2: top + plotHeight, stroke: "#e2e2e2")
            svg.text(Self.axisLabel(decade) + " s", x: x(decade), y: top + plotHeight + 16, size: 11, anchor: "middle")
            decade *= 10
        }
        var tick = 0.0
        while tick <= upperCalls {
            svg.line(x1: left, y1: y(tick), x2: left + plotWidth, y2: y(tick), stroke: "#eeeeee")
            svg.text(Format.grouped(Int(tick)), x: left - 6, y: y(tick) + 4, size: 11, anchor: "end")
            tick += 500
        }
        svg.text(
            "completion time (log scale)", x: left + plotWidth / 2, y: top + plotHeight + 36, size: 11,
            anchor: "middle")
        svg.text("write calls", x: left - 6, y: top - 6, size: 11, anchor: "end")

        let palette = ["#7a7a7a", "#b3452f", "#2f6db3", "#3c9a5f", "#8a5cb8", "#d08a2c"]
        // Schedules that land on the same point (the default is full jitter) share one label.
        var labels: [(x: Double, y: Double, names: [String], color: String)] = []
        for (index, row) in rows.enumerated() {
            let color = palette[index % palette.count]
            if let anchor = ContentionReference.figures[row.schedule] {
                svg.circle(x: x(anchor.completionSeconds), y: y(anchor.calls), radius: 6, fill: "none", stroke: color)
            }
            let pointX = x(row.completionMilliseconds / 1_000)
            let pointY = y(row.calls)
            svg.circle(x: pointX, y: pointY, radius: 4.5, fill: color, stroke: color)
            if let same = labels.firstIndex(where: { abs($0.x - pointX) < 2 && abs($0.y - pointY) < 2 }) {
                labels[same].names.append(row.schedule)
            } else {
                labels.append((pointX, pointY, [row.schedule], color))
            }
            let legendY = top + 14 + Double(index) * 18
            svg.circle(x: left + plotWidth + 20, y: legendY - 4, radius: 4.5, fill: color, stroke: color)
            svg.text(
                "\(row.schedule): \(Format.decimal(row.calls, 0)), "
                    + "\(Format.decimal(row.completionMilliseconds / 1_000, 1)) s",
                x: left + plotWidth + 30, y: legendY, size: 11)
        }
        // Place each label at the first candidate spot that overlaps no earlier label and no point.
        var placed: [(minX: Double, minY: Double, maxX: Double, maxY: Double)] = labels.map {
            ($0.x - 5, $0.y - 5, $0.x + 5, $0.y + 5)
        }
        for label in labels {
            let text = label.names.joined(separator: " = ")
            let textWidth = Double(text.count) * 6.3
            let candidates: [(Double, Double)] = [
                (8, -8), (8, 16), (-8 - textWidth, -8), (-8 - textWidth, 16), (8, -22), (8, 30),
                (-8 - textWidth, -22), (-8 - textWidth, 30),
            ]
            var choice = candidates[0]
            for candidate in candidates {
                let box = (
                    minX: label.x + candidate.0, minY: label.y + candidate.1 - 10,
                    maxX: label.x + candidate.0 + textWidth, maxY: label.y + candidate.1 + 2
                )
                let overlaps = placed.contains {
                    box.minX < $0.maxX && $0.minX < box.maxX && box.minY < $0.maxY && $0.minY < box.maxY
                }
                if !overlaps {
                    choice = candidate
                    placed.append(box)
                    break
                }
            }
            svg.text(text, x: label.x + choice.0, y: label.y + choice.1, size: 11, fill: label.color)
        }
        return svg
    }

    private static func axisLabel(_ value: Double) -> String {
        if value >= 1_000_000 { return Format.decimal(value / 1_000_000, 0) + "M" }
        if value >= 1_000 { return Format.decimal(value / 1_000, 0) + "k" }
        if value >= 1 { return Format.decimal(value, 0) }
        return Format.decimal(value, value >= 0.1 ? 1 : 2)
    }
}
