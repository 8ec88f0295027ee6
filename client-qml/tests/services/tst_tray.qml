import QtQuick
import QtQuick.Window
import QtTest
import Qsd
import "../../examples/bar"

// /tray from a real qsd (the session's StatusNotifierWatcher) and real StatusNotifierItems
// (run_services.py: "Notes" with a theme icon from its own icon theme and a DBusMenu; "Chat"
// with only a pixmap; "Sync", passive), through the example bar's tray and its menu rendered in
// QML. Every click is checked where it lands: the item records the calls it gets.
TestCase {
    id: test
    name: "Tray"
    when: windowShown

    readonly property string notes: "org.qsdtest.BarNotes/StatusNotifierItem"
    readonly property string chat: "org.qsdtest.BarChat/StatusNotifierItem"
    readonly property string sync: "org.qsdtest.BarSync/StatusNotifierItem"

    Window {
        id: bar
        width: 800
        height: 34
        visible: true
        TrayArea {
            id: tray
            x: 600
            y: 7
            onMenuRequested: (item, icon) => { test.requested = item }
        }
    }
    property string requested: ""
    TrayMenu {
        id: menu
        bar: bar
        anchorItem: tray
        itemKey: test.notes
    }
    Component {
        id: imageComponent
        Image { asynchronous: true }
    }

    // The calls the item recorded (its org.qsdtest.Control.Calls()).
    function calls(service) {
        var r = QsdDaemon.drive("tray-calls", [service])
        compare(r.code, 0, "tray-calls: " + r.output)
        return JSON.parse(r.output)
    }
    function recorded(service, call) {
        var want = JSON.stringify(call)
        return calls(service).some(function(c) { return JSON.stringify(c) === want })
    }
    function find(item, test) {
        if (!item || !item.visible) return null   // shown items only (not ones on their way out)
        if (test(item)) return item
        for (var i = 0; i < item.children.length; ++i) {
            var found = find(item.children[i], test)
            if (found) return found
        }
        return null
    }
    function findAll(item, test, out) {
        if (!item || !item.visible) return out
        if (test(item)) out.push(item)
        for (var i = 0; i < item.children.length; ++i) findAll(item.children[i], test, out)
        return out
    }
    // A shown row of the menu by its label.
    function row(label) {
        return find(menu.contentItem, function(i) { return i.objectName === "trayMenuEntry" && i.text === label })
    }
    function shownLabels() {
        return findAll(menu.contentItem, function(i) { return i.objectName === "trayMenuEntry" }, []).map(function(r) { return r.text })
    }
    // Clicks a row once the menu is laid out: a change of the menu in the tree replaces its
    // entries (arrays change as a whole), and the new rows are positioned when the window is
    // next polished (before a frame).
    function laidOut(item) {
        for (var i = item; i; i = i.parent)
            if (isPolishScheduled(i)) return false
        return true
    }
    function clickRow(label) {
        tryVerify(function() { var r = row(label); return r !== null && laidOut(r) }, 10000, "the row " + label + " laid out")
        mouseClick(row(label))
    }
    // The rendered state of a row's check or radio mark: its entry's toggleState, and whether
    // the mark is drawn filled.
    function mark(label, kind) {
        var r = row(label)
        var m = r ? find(r, function(i) { return i.objectName === kind }) : null
        return m ? { state: r.parent.toggleState, on: Qt.colorEqual(m.border.color, Theme.accent) } : null
    }

    function initTestCase() {
        verify(QsdDaemon.start())
        tryVerify(function() { return Qsd.connected }, 30000, "connected")
        tryVerify(function() { return Qsd.tray?.available === true }, 30000, "/tray available")
        // The items register again when qsd takes the watcher name.
        tryCompare(Qsd.tray.items, "count", 3, 30000)
    }

    function test_1_items() {
        var n = Qsd.tray.items[notes]
        compare(n.title, "Notes")
        compare(n.status, QsdTray.itemStatus.active)
        compare(n.category, QsdTray.itemCategory.applicationStatus)
        compare(n.tooltipTitle, "Notes")
        verify(n.hasMenu)
        compare(Qsd.tray.items[chat].category, QsdTray.itemCategory.communications)
        compare(Qsd.tray.items[chat].hasMenu, false)
        compare(Qsd.tray.items[sync].status, QsdTray.itemStatus.passive)
        compare(Qsd.model("/tray/items").idAt(1), notes)
    }

    function test_2_iconsLoad() {
        // A theme icon: the file in the app's own icon theme (IconThemePath), the size nearest
        // to 64. A pixmap: a PNG qsd wrote, from the best-fitting size (64 of 64 and 22).
        var themed = Qsd.tray.items[notes].icon
        verify(themed.startsWith("file://") && themed.indexOf("/bar-icons/hicolor/64x64/apps/qsd-bar-notes.png") > 0, themed)
        var pixmap = Qsd.tray.items[chat].icon
        verify(pixmap.startsWith("file://") && pixmap.indexOf("/qsd/icons/") > 0, pixmap)
        for (var source of [themed, pixmap, Qsd.tray.items[sync].icon]) {
            var image = imageComponent.createObject(test, { source: source })
            tryCompare(image, "status", Image.Ready, 10000, source)
            compare(image.implicitWidth, 64)
            compare(image.implicitHeight, 64)
            image.destroy()
        }
        // The bar's tray shows the two that are not passive, their icons loaded.
        tryVerify(function() {
            var icons = findAll(tray, function(i) { return i.objectName === "trayIcon" }, [])
            return icons.length === 2 && icons.every(function(i) { return i.status === Image.Ready })
        }, 10000, "two tray icons loaded")
    }

    function test_3_activate() {
        // A left click on the Chat icon: tray.activate with where the click was.
        var icon = find(tray, function(i) { return i.objectName === "trayIcon" && i.source.toString() === Qsd.tray.items[chat].icon })
        verify(icon !== null)
        mouseClick(icon)
        tryVerify(function() { return calls("org.qsdtest.BarChat").some(function(c) { return c[0] === "Activate" }) }, 15000,
                  "Activate reached the item")
        // From QML directly, coordinates as given.
        var answered = false, error = "unset"
        Qsd.call("tray.activate", { item: notes, x: 12, y: 34 }, function(err) { answered = true; error = err })
        tryVerify(function() { return answered }, 15000)
        compare(error, null)
        tryVerify(function() { return recorded("org.qsdtest.BarNotes", ["Activate", 12, 34]) }, 15000)
        // A right click on an item with a menu asks the bar to open it.
        var notesIcon = find(tray, function(i) { return i.objectName === "trayIcon" && i.source.toString() === Qsd.tray.items[notes].icon })
        mouseClick(notesIcon, notesIcon.width / 2, notesIcon.height / 2, Qt.RightButton)
        compare(requested, notes)
    }

    function test_4_theMenuRendered() {
        menu.open = true
        tryVerify(function() { return menu.visible })
        tryVerify(function() { return JSON.stringify(shownLabels()) === JSON.stringify(["Open", "Options", "Disabled", "Quit"]) },
                  10000, "the menu's entries")
        compare(row("Options").note, "\u25b8", "a submenu")
        compare(row("Quit").note, "Ctrl+q", "the shortcut")
        compare(row("Disabled").enabled, false)
        verify(findAll(menu.contentItem, function(i) { return i.objectName === "trayMenuIcon" && i.status === Image.Ready }, []).length >= 2,
               "the entries' icons (icon-data, and icon-name from the app's theme) load")
        tryVerify(function() { return recorded("org.qsdtest.BarNotes", ["Event", 0, QsdTray.menuEvent.opened]) }, 15000)
        // Opening the submenu: the application fills it when asked (AboutToShow), and the
        // checkbox and the radio group show their states.
        clickRow("Options")
        tryVerify(function() { return row("Recent") !== null }, 15000, "the entry added on AboutToShow")
        verify(recorded("org.qsdtest.BarNotes", ["AboutToShow", 3]))
        compare(row("Options").note, "\u25be")
        compare(mark("Sync", "checkmark"), { state: 1, on: true })
        compare(mark("Mode A", "radio"), { state: 1, on: true })
        compare(mark("Mode B", "radio"), { state: 0, on: false })
    }

    function test_5_clicksReachTheItem() {
        // The checkbox: a click from QML (tray.menuEvent), the item toggles it, the tree and the
        // menu follow.
        clickRow("Sync")
        tryVerify(function() { return recorded("org.qsdtest.BarNotes", ["Event", 4, QsdTray.menuEvent.clicked]) }, 15000,
                  "the click reached the item")
        tryVerify(function() { return mark("Sync", "checkmark")?.state === 0 }, 15000, "unchecked in the menu")
        compare(mark("Sync", "checkmark").on, false)
        // The radio group: the other one goes off.
        clickRow("Mode B")
        tryVerify(function() { return recorded("org.qsdtest.BarNotes", ["Event", 6, QsdTray.menuEvent.clicked]) }, 15000)
        tryVerify(function() { return mark("Mode B", "radio")?.state === 1 }, 15000)
        compare(mark("Mode A", "radio"), { state: 0, on: false })
        compare(mark("Mode B", "radio"), { state: 1, on: true })
        // A disabled entry takes no click.
        clickRow("Disabled")
        var done = false
        Qsd.call("hello", {}, function() { done = true })
        tryVerify(function() { return done })
        verify(!calls("org.qsdtest.BarNotes").some(function(c) { return c[0] === "Event" && c[1] === 7 }))
        // Closing the menu tells the application.
        menu.open = false
        tryVerify(function() { return recorded("org.qsdtest.BarNotes", ["Event", 0, QsdTray.menuEvent.closed]) }, 15000)
    }
}
