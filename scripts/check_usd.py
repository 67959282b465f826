#!/usr/bin/env python3
"""Checks USD stages written by xpbd-sim (src/output/usd.rs) with Pixar's own reader, not in CI.

    pip install usd-core
    cargo test --lib usd -- --ignored probe_files      # writes /tmp/usdprobe/stage.usd{a,c}
    python3 scripts/check_usd.py /tmp/usdprobe/stage.usda /tmp/usdprobe/stage.usdc

For each file: prints the stage metadata and, per root prim, its type, its point count and
the points at the first and last time code (a few of them), and checks the contract: every
root prim a Mesh, linear BasisCurves or Points (fluids, one constant width); topology valid (UsdGeomMesh.ValidateTopology, curve
vertex counts summing to the points); time samples at whole frame numbers inside
start..end; per sample the same point count, `extent` equal to the points' bounding box,
`velocities`/`normals` (interpolation vertex) one per point; `primvars:st` texCoord2f[]
faceVarying and indexed, one index per face corner; and, where the USD build has them, every
registered UsdValidation validator (about 30 in usd-core 26.x) passes. With several files, every file must hold
the same values as the first (text and binary encodings of one stage agree). Exits 1 on any
problem.
"""

import sys

from pxr import Sdf, Usd, UsdGeom

problems = []


def check(ok, message):
    if not ok:
        problems.append(message)
    return ok


def show(points, limit=3):
    head = ", ".join("(%.6g, %.6g, %.6g)" % tuple(p) for p in list(points)[:limit])
    return "[%s%s]" % (head, ", ..." if len(points) > limit else "")


def check_file(path):
    """Checks one stage; returns {attribute path: {time: value}} for comparison."""
    stage = Usd.Stage.Open(path)
    if not check(stage is not None, f"{path}: does not open"):
        return {}
    start, end = stage.GetStartTimeCode(), stage.GetEndTimeCode()
    fps, tps = stage.GetFramesPerSecond(), stage.GetTimeCodesPerSecond()
    up, mpu = UsdGeom.GetStageUpAxis(stage), UsdGeom.GetStageMetersPerUnit(stage)
    default = stage.GetDefaultPrim()
    print(f"{path}")
    print(f"  timeCodesPerSecond {tps}  framesPerSecond {fps}  start {start}  end {end}")
    print(f"  upAxis {up}  metersPerUnit {mpu}  defaultPrim {default.GetPath() if default else None}")
    check(fps == tps and fps > 0, f"{path}: fps {fps} vs timeCodesPerSecond {tps}")
    check(up in ("Y", "Z") and mpu == 1.0, f"{path}: upAxis {up}, metersPerUnit {mpu}")
    check(bool(default), f"{path}: no defaultPrim")
    try:
        from pxr import UsdValidation
    except ImportError:
        UsdValidation = None
    if UsdValidation is not None:
        validators = UsdValidation.ValidationRegistry().GetOrLoadAllValidators()
        errors = UsdValidation.ValidationContext(validators).Validate(stage)
        print(f"  UsdValidation: {len(validators)} validators, {len(errors)} errors")
        for e in errors:
            check(False, f"{path}: {e.GetName()}: {e.GetMessage()}")
    values = {}
    for prim in stage.GetPseudoRoot().GetChildren():
        where = f"{path}:{prim.GetPath()}"
        kind = prim.GetTypeName()
        spec = stage.GetRootLayer().GetPrimAtPath(prim.GetPath())
        check(spec.specifier == Sdf.SpecifierDef, f"{where}: not a def")
        collider = prim.GetAttribute("userProperties:xpbd:collider")
        print(f"  {prim.GetPath()}: {kind}{'  (collider)' if collider and collider.Get() else ''}")
        check(kind in ("Mesh", "BasisCurves", "Points"), f"{where}: type {kind}")
        geom = UsdGeom.PointBased(prim)
        times = geom.GetPointsAttr().GetTimeSamples()
        if not check(len(times) > 0, f"{where}: points have no time samples"):
            continue
        check(all(t == int(t) and start <= t <= end for t in times), f"{where}: sample times {times}")
        count = len(geom.GetPointsAttr().Get(times[0]))
        for t in (times[0], times[-1]):
            print(f"    points @ {t:g}: {count} {show(geom.GetPointsAttr().Get(t))}")
        for attr in prim.GetAttributes():
            samples = attr.GetTimeSamples()
            values[str(attr.GetPath())] = (
                {t: attr.Get(t) for t in samples} if samples else {"default": attr.Get()}
            )
        normals = geom.GetNormalsAttr()
        velocities = geom.GetVelocitiesAttr()
        print(f"    velocities: {len(velocities.GetTimeSamples())} samples, normals: "
              f"{len(normals.GetTimeSamples())} samples ({geom.GetNormalsInterpolation()})")
        for t in times:
            points = geom.GetPointsAttr().Get(t)
            check(len(points) == count, f"{where}: {len(points)} points at {t}, {count} at first")
            extent = geom.GetExtentAttr().Get(t)
            computed = UsdGeom.PointBased.ComputeExtent(points)
            check(extent is not None and list(extent) == list(computed),
                  f"{where}: extent {extent} at {t}, points span {computed}")
            for name, attr in (("velocities", velocities), ("normals", normals)):
                if attr.HasAuthoredValue():
                    v = attr.Get(t)
                    check(v is not None and len(v) == count, f"{where}: {name} at {t}")
        if normals.HasAuthoredValue():
            check(geom.GetNormalsInterpolation() == "vertex", f"{where}: normals interpolation")
        if kind == "Mesh":
            mesh = UsdGeom.Mesh(prim)
            counts, indices = mesh.GetFaceVertexCountsAttr().Get(), mesh.GetFaceVertexIndicesAttr().Get()
            ok, why = UsdGeom.Mesh.ValidateTopology(indices, counts, count)
            check(ok, f"{where}: topology: {why}")
            print(f"    faces {len(counts)}  subdivisionScheme {mesh.GetSubdivisionSchemeAttr().Get()}")
            st = UsdGeom.PrimvarsAPI(prim).GetPrimvar("st")
            if st:
                values_st, st_indices = st.Get(), st.GetIndices()
                print(f"    st: {st.GetTypeName()} {st.GetInterpolation()} {len(values_st)} values, "
                      f"{len(st_indices) if st_indices else 0} indices {list(st_indices)[:8]}")
                check(str(st.GetTypeName()) == "texCoord2f[]", f"{where}: st type {st.GetTypeName()}")
                check(st.GetInterpolation() == "faceVarying", f"{where}: st interpolation")
                check(st.IsIndexed() and len(st_indices) == len(indices), f"{where}: st indices")
                check(max(st_indices) < len(values_st) and min(st_indices) >= 0, f"{where}: st index range")
        elif kind == "Points":
            points = UsdGeom.Points(prim)
            widths = points.GetWidthsAttr().Get()
            print(f"    widths {list(widths)} ({points.GetWidthsInterpolation()})")
            check(len(widths) == 1 and points.GetWidthsInterpolation() == "constant", f"{where}: widths")
            check(widths[0] > 0, f"{where}: width {widths[0]}")
        else:
            curves = UsdGeom.BasisCurves(prim)
            counts = curves.GetCurveVertexCountsAttr().Get()
            widths = curves.GetWidthsAttr().Get()
            print(f"    type {curves.GetTypeAttr().Get()}  curves {len(counts)}  widths {list(widths)} "
                  f"({curves.GetWidthsInterpolation()})")
            check(curves.GetTypeAttr().Get() == "linear", f"{where}: curve type")
            check(sum(counts) == count, f"{where}: curve vertex counts sum {sum(counts)}, {count} points")
            check(len(widths) == 1 and curves.GetWidthsInterpolation() == "constant", f"{where}: widths")
    return values


def main(paths):
    if not paths:
        sys.exit(__doc__)
    first = None
    for path in paths:
        values = check_file(path)
        if first is None:
            first = values
        else:
            check(values == first, f"{path}: values differ from {paths[0]}")
    for p in problems:
        print("PROBLEM:", p)
    print("ok" if not problems else f"{len(problems)} problem(s)")
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main(sys.argv[1:])
