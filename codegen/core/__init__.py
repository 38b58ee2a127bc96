"""The core every stage shares: the IR (`ir`), the lowered program (`program`), pattern
matching on the IR (`pattern`), boards (`boards`), names, limits, data sets, the
package's data folders (`resources`). It imports no other stage."""
