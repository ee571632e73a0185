import Foundation

/// A minimal SVG writer: shapes and text appended in order, serialized as plain SVG 1.1.
struct SVGDocument {
    /// The canvas width, in pixels.
    var width: Double
    /// The canvas height, in pixels.
    var height: Double
    private var elements: [String] = []

    /// An empty canvas.
    init(width: Double, height: Double) {
        self.width = width
        self.height = height
        self.rectangle(x: 0, y: 0, width: width, height: height, fill: "#ffffff")
    }

    /// A filled rectangle.
    mutating func rectangle(
        x: Double, y: Double, width: Double, height: Double, fill: String, stroke: String? = nil
    ) {
        var element =
            "<rect x=\"\(Self.number(x))\" y=\"\(Self.number(y))\" width=\"\(Self.number(Swift.max(width, 0)))\" "
            + "height=\"\(Self.number(height))\" fill=\"\(fill)\""
        if let stroke { element += " stroke=\"\(stroke)\"" }
        self.elements.append(element + "/>")
    }

    /// A straight line.
    mutating func line(
        x1: Double, y1: Double, x2: Double, y2: Double, stroke: String, width: Double = 1, dashed: Bool = false
    ) {
        var element =
            "<line x1=\"\(Self.number(x1))\" y1=\"\(Self.number(y1))\" x2=\"\(Self.number(x2))\" "
            + "y2=\"\(Self.number(y2))\" stroke=\"\(stroke)\" stroke-width=\"\(Self.number(width))\""
        if dashed { element += " stroke-dasharray=\"4 3\"" }
        self.elements.append(element + "/>")
    }

    /// A circle, filled or hollow.
    mutating func circle(x: Double, y: Double, radius: Double, fill: String, stroke: String) {
        self.elements.append(
            "<circle cx=\"\(Self.number(x))\" cy=\"\(Self.number(y))\" r=\"\(Self.number(radius))\" "
                + "fill=\"\(fill)\" stroke=\"\(stroke)\" stroke-width=\"1.5\"/>")
    }

    /// Text; `anchor` is `start`, `middle` or `end`.
    mutating func text(
        _ content: String, x: Double, y: Double, size: Double = 12, anchor: String = "start",
        weight: String = "normal", fill: String = "#222222"
    ) {
        self.elements.append(
            "<text x=\"\(Self.number(x))\" y=\"\(Self.number(y))\" font-family=\"Helvetica, Arial, sans-serif\" "
                + "font-size=\"\(Self.number(size))\" text-anchor=\"\(anchor)\" font-weight=\"\(weight)\" "
                + "fill=\"\(fill)\">\(Self.escaped(content))</text>")
    }

    /// The document.
    var serialized: String {
        """
        <?xml version="1.0" encoding="UTF-8"?>
        <svg xmlns="http://www.w3.org/2000/svg" width="\(Self.number(self.width))" \
        height="\(Self.number(self.height))" viewBox="0 0 \(Self.number(self.width)) \(Self.number(self.height))">
        \(self.elements.joined(separator: "\n"))
        </svg>

        """
    }

    private static func number(_ value: Double) -> String {
        Format.decimal(value, 1)
    }

    private static func escaped(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;")
            .replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;")
    }
}
