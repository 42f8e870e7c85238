/*
 * Test-only preload for the sanitizer build: dlclose does nothing, so the
 * shared objects Open MPI loads for its components stay mapped until exit.
 *
 * Why: LeakSanitizer matches its suppressions (tests/lsan.supp) against
 * the modules of an allocation's call stack. With fast unwinding (frame
 * pointers, several times faster than the DWARF unwinder on every
 * allocation) a stack that enters a library built without frame pointers
 * stops at its first frame; if that library was unloaded before the
 * report, the frame has no module name and the leak cannot be matched.
 * Kept mapped, the frame names its library (mca_*.so) and the third-party
 * leak is suppressed by name as before; our own code keeps full stacks.
 */
int dlclose(void *handle);

int dlclose(void *handle)
{
    (void)handle;
    return 0;
}
