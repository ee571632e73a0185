/// A plain-text table with aligned columns.
struct TextTable {
    /// How a column aligns its cells.
    enum Alignment {
        case left
        case right
    }

    /// The column titles.
    var headers: [String]
    /// Each column's alignment.
    var alignments: [Alignment]
    /// The rows, one string per column.
    var rows: [[String]] = []

    /// A table with `columns`, each a title and an alignment.
    init(_ columns: [(String, Alignment)]) {
        self.headers = columns.map(\.0)
        self.alignments = columns.map(\.1)
    }

    /// Adds a row.
    mutating func append(_ row: [String]) {
        precondition(row.count == self.headers.count, "one cell per column")
        self.rows.append(row)
    }

    /// The table as lines of text, with a rule under the header.
    var rendered: String {
        var widths = self.headers.map(\.count)
        for row in self.rows {
            for (index, cell) in row.enumerated() {
                widths[index] = Swift.max(widths[index], cell.count)
            }
        }
        func line(_ cells: [String]) -> String {
            var parts: [String] = []
            for (index, cell) in cells.enumerated() {
                let padding = String(repeating: " ", count: widths[index] - cell.count)
                parts.append(self.alignments[index] == .left ? cell + padding : padding + cell)
            }
            var text = parts.joined(separator: "  ")
            while text.hasSuffix(" ") { text.removeLast() }
            return text
        }
        var lines = [line(self.headers)]
        lines.append(widths.map { String(repeating: "-", count: $0) }.joined(separator: "  "))
        lines += self.rows.map(line)
        return lines.joined(separator: "\n")
    }
}
