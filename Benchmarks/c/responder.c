// The limit the Swift responder is measured against: the smallest libdbus responder that answers
// org.blemu.Bench1.Echo(ay) -> ay on /bench, dispatching with dbus_connection_read_write_dispatch.
// Usage: responder <bus address> <well-known name>
#include <dbus/dbus.h>
#include <stdio.h>
#include <string.h>

static DBusHandlerResult handle(DBusConnection *connection, DBusMessage *message, void *data) {
    (void)data;
    if (!dbus_message_is_method_call(message, "org.blemu.Bench1", "Echo"))
        return DBUS_HANDLER_RESULT_NOT_YET_HANDLED;
    DBusMessageIter in, array, out, outArray;
    const unsigned char *bytes = NULL;
    int count = 0;
    if (dbus_message_iter_init(message, &in) && dbus_message_iter_get_arg_type(&in) == DBUS_TYPE_ARRAY) {
        dbus_message_iter_recurse(&in, &array);
        dbus_message_iter_get_fixed_array(&array, &bytes, &count);
    }
    DBusMessage *reply = dbus_message_new_method_return(message);
    dbus_message_iter_init_append(reply, &out);
    dbus_message_iter_open_container(&out, DBUS_TYPE_ARRAY, "y", &outArray);
    if (count > 0) dbus_message_iter_append_fixed_array(&outArray, DBUS_TYPE_BYTE, &bytes, count);
    dbus_message_iter_close_container(&out, &outArray);
    dbus_connection_send(connection, reply, NULL);
    dbus_message_unref(reply);
    return DBUS_HANDLER_RESULT_HANDLED;
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s <bus address> <name>\n", argv[0]);
        return 64;
    }
    DBusError error;
    dbus_error_init(&error);
    DBusConnection *connection = dbus_connection_open_private(argv[1], &error);
    if (!connection || !dbus_bus_register(connection, &error)) {
        fprintf(stderr, "responder: %s\n", error.message);
        return 69;
    }
    dbus_connection_add_filter(connection, handle, NULL, NULL);
    if (dbus_bus_request_name(connection, argv[2], DBUS_NAME_FLAG_DO_NOT_QUEUE, &error) !=
        DBUS_REQUEST_NAME_REPLY_PRIMARY_OWNER) {
        fprintf(stderr, "responder: cannot own %s\n", argv[2]);
        return 69;
    }
    while (dbus_connection_read_write_dispatch(connection, -1)) {
    }
    return 0;
}
